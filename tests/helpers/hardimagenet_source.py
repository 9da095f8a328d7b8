"""Hard ImageNet's own code, vendored for the faithfulness tests (the oracle bgbench is compared with).

Source: github.com/mmoayeri/HardImageNet, commit a39e3f996f70eb538ff71829b80781bac617a2d4
(the newest; the files below last changed in 5b0da435c9d7fd8f7d829d543617694bd2002fd6).

- `datasets/hard_imagenet.py` lines 13-75: the meta files and class `HardImageNet`;
- `augmentations.py` lines 29-38 and 43-45: `standard_resize_center_crop`, `to_tens`;
- `rfs.py` lines 11-19 and 21-78: `l2_normalize`, `compute_rfs`, `noisy_fg_bg_accs`;
- `ablations.py` lines 14-24, 30-41, 43-45 and 79-203: `replace_with_gray`, `get_corners`,
  `get_bbox`, `num_nonzero_pixels`, `trim_tile`, `repeat_tile_to_fill_bbox`,
  `largest_adjacent_tile`, `tile`, `eval_under_ablation`;
- `saliency_analysis.py` lines 67-163: `binarize`, `delta_saliency_density`,
  `intersection_over_union_and_dice`, `compute_scores_one_batch`,
  `compute_salient_alignment_scores`.

The bodies are as released; what is changed is only what ties them to the authors' machines, each
marked `# vendored:` where it is: the two hard-coded roots are arguments (`_IMAGENET_ROOT`,
`_MASK_ROOT`, lines 10-11), the meta pickles are read when the dataset is made instead of at
import, `.cuda()` and `use_cuda=True` are dropped (the tests run on the CPU), loaders take
`num_workers=0`, rfs's loader is not shuffled (it pairs images with their noise) and its noise
comes from `randn_like` (default `torch.randn_like`, line 41), which a test may replace, and
the saliency loader's `get_cam_obj` (lines 43-65) is given a CAM object by the caller.
"""
import glob
import os
import pickle

import numpy as np
import scipy
import scipy.ndimage
import torch
from PIL import Image
from torchvision import transforms
from tqdm import tqdm


# ---- augmentations.py lines 29-38, 43-45 -------------------------------------------------------

def standard_resize_center_crop(img, mask, resize_shape=256):
    t = transforms.Compose([transforms.Resize((resize_shape, resize_shape)), transforms.CenterCrop(224), transforms.ToTensor()])
    img, mask = [t(x) for x in [img, mask]]
    if img.shape[0] == 1:
        img = torch.cat([img, img, img], axis=0)
    if mask.shape[0] == 1:
        mask = torch.cat([mask, mask, mask], axis=0)
    return img, mask


def to_tens(img, mask):
    img, mask = [transforms.ToTensor()(x) for x in [img, mask]]
    return img, mask


# ---- datasets/hard_imagenet.py lines 13-75 -----------------------------------------------------

class HardImageNet(torch.utils.data.Dataset):
    def __init__(self, split='val', aug=standard_resize_center_crop, ft=False, balanced_subset=False,
                 imagenet_root=None, mask_root=None):  # vendored: the roots of lines 10-11 as arguments
        '''
        Returns original ImageNet index when ft is False, otherwise returns label between 0 and 14
        '''
        global _IMAGENET_ROOT, _MASK_ROOT, wnid_to_idx, inet_idx  # vendored: lines 10-17, read here
        _IMAGENET_ROOT, _MASK_ROOT = str(imagenet_root).rstrip('/') + '/', str(mask_root).rstrip('/') + '/'
        with open(_MASK_ROOT+'meta/idx_to_wnid.pkl', 'rb') as f:
            idx_to_wnid = pickle.load(f)
        wnid_to_idx = dict({v:k for k,v in idx_to_wnid.items()})
        with open(_MASK_ROOT+'meta/hard_imagenet_idx.pkl', 'rb') as f:
            inet_idx = pickle.load(f)
        self.aug = aug if aug is not None else to_tens
        self.split = split
        self.balanced_subset = balanced_subset
        self.collect_mask_paths()
        # self.mask_paths = glob.glob(_MASK_ROOT + split+'/*')
        self.num_classes = 15
        self.ft = ft

    def map_wnid_to_label(self, wnid):
        ind = wnid_to_idx[wnid]
        if self.ft:
            ind = inet_idx.index(ind)
        return ind

    def collect_mask_paths(self):
        if self.balanced_subset and self.split == 'train':
            raise NotImplementedError  # vendored: lines 39-52 read paths_by_rank2.pkl, not in the tests
        else:
            self.mask_paths = glob.glob(_MASK_ROOT + self.split+'/*')

    def __getitem__(self, ind):
        mask_path = self.mask_paths[ind]
        mask_path_suffix = mask_path.split('/')[-1]
        wnid = mask_path_suffix.split('_')[0]
        fname = mask_path_suffix[len(wnid)+1:] #if self.split == 'val' else mask_path_suffix

        img_path = os.path.join(_IMAGENET_ROOT, self.split, wnid, fname)
        img, mask = [Image.open(p) for p in [img_path, mask_path]]

        img, mask = self.aug(img, mask)

        if img.shape[0] > 3: #weird bug
            img, mask = [x[:3] for x in [img, mask]]

        class_ind = self.map_wnid_to_label(wnid)
        mask[mask > 0] = 1
        return img, mask, class_ind

    def __len__(self):
        return len(self.mask_paths)


# ---- rfs.py lines 11-19, 21-78 -----------------------------------------------------------------

def l2_normalize(X):
    flat_X = X.flatten(1)
    denom = flat_X.pow(2).sum(keepdim=True, dim=1).sqrt()
    out = flat_X / denom
    return out.reshape(X.shape)


def compute_rfs(noisy_fg_acc, noisy_bg_acc):
    avg = 0.5*(noisy_fg_acc + noisy_bg_acc)
    return 0 if (avg == 1 or avg == 0) else (noisy_bg_acc - noisy_fg_acc) / (2*min(avg, 1-avg))


def noisy_fg_bg_accs(model, dset, noise_sigma=0.25, apply_norm=True, l2=False, trials=3,
                     randn_like=torch.randn_like):  # vendored: the dataset is given; the noise's source
    loader = torch.utils.data.DataLoader(dset, batch_size=36, shuffle=False, num_workers=0)  # vendored
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])

    cnt_by_class, noisy_fg_cc_by_class, noisy_bg_cc_by_class = dict(), dict(), dict()

    for imgs, masks, labels in tqdm(loader, disable=True):
        for trial in range(trials):

            if noise_sigma > 0:
                noise = randn_like(imgs, trial)  # vendored: torch.randn_like(imgs, device=imgs.device)
                if l2:
                    noisy_fg, noisy_bg = [torch.clamp(imgs + noise_sigma*l2_normalize(x * noise), 0, 1) for x in [masks, 1-masks]]
                else: # linf noise
                    noisy_fg, noisy_bg = [torch.clamp(imgs + (x * noise * noise_sigma), 0, 1) for x in [masks, 1-masks]]

                if apply_norm:
                    noisy_fg, noisy_bg = [normalize(x) for x in [noisy_fg, noisy_bg]]
                noisy_fg_preds, noisy_bg_preds = [model(x).argmax(1) for x in [noisy_fg, noisy_bg]]
            else:
                if apply_norm:
                    imgs = normalize(imgs)
                preds = model(imgs).argmax(1)

            for y in np.unique(labels.cpu().numpy()):
                if y not in noisy_fg_cc_by_class:
                    noisy_fg_cc_by_class[y], noisy_bg_cc_by_class[y], cnt_by_class[y] = 0, 0, 0

                if noise_sigma > 0:
                    noisy_fg_cc_by_class[y] += (noisy_fg_preds[labels == y] == y).sum().item()
                    noisy_bg_cc_by_class[y] += (noisy_bg_preds[labels == y] == y).sum().item()
                else:
                    noisy_fg_cc_by_class[y] += (preds[labels == y] == y).sum().item()
                cnt_by_class[y] += (labels == y).sum().item()

    noisy_fg_acc_by_class = dict({c:noisy_fg_cc_by_class[c]/cnt_by_class[c] for c in cnt_by_class})
    noisy_bg_acc_by_class = dict({c:noisy_bg_cc_by_class[c]/cnt_by_class[c] for c in cnt_by_class})
    noisy_fg_acc, noisy_bg_acc = [np.average(list(x.values())) for x in [noisy_fg_acc_by_class, noisy_bg_acc_by_class]]

    rfs = compute_rfs(noisy_fg_acc, noisy_bg_acc)
    return rfs, noisy_fg_acc, noisy_bg_acc, noisy_fg_acc_by_class, noisy_bg_acc_by_class


# ---- ablations.py lines 14-24, 30-45, 79-203 ---------------------------------------------------

def replace_with_gray(img, mask, keep_shape=True):
    gray = torch.ones_like(mask) * 0.5
    if keep_shape:
        out = img * (1-mask) + gray * mask
    else:
        out = []
        for i in range(img.shape[0]):
            bbox = get_bbox(mask[i,0])
            out.append(img[i] * (1-bbox) + gray[i] * bbox)
        out = torch.stack(out)
    return out


def get_corners(arr):
    on_pixels = np.where(arr != 0)
    x_max, y_max = [np.max(on_pixels[i]) for i in [0,1]]
    x_min, y_min = [np.min(on_pixels[i]) for i in [0,1]]
    return x_min, x_max, y_min, y_max


def get_bbox(arr, expand=False):
    out = np.zeros_like(arr)
    if arr.sum() >0:
        x_min, x_max, y_min, y_max = get_corners(arr)
        out[x_min:x_max, y_min:y_max] = 1
    return out#, x_min, x_max, y_min, y_max


def trim_tile(img, mask, x1, x2, y1, y2, dir):
    _, h, w = img.shape
    x1, y1 = [max(a,0) for a in [x1, y1]]
    x2, y2 = [min(a,d) for a,d in zip([x2, y2], [h,w])]
    if mask[:, y1:y2, x1:x2].sum() == 0:
        out = img[:, y1:y2, x1:x2]
        size = (x2-x1) * (y2-y1)
    else:
        # find first instance of other object
        if dir == 'left':
            is_there_obj_by_col = mask[0, y1:y2, x1:x2].sum(1)
            # we take the sum from col i leftwards (towards bbox) looking for lowest i where all leftward sums are 0 (no object)
            sum_moving_right = [sum(is_there_obj_by_col[i:]) for i in range(x2-x1)]
            furthest_we_can_go = sum_moving_right.index(0) if 0 in sum_moving_right else 0
            out = img[:, y1:y2, (x1+furthest_we_can_go):x2]
            size = furthest_we_can_go * (y2-y1)
        elif dir == 'right':
            is_there_obj_by_col = mask[0, y1:y2, x1:x2].sum(0)
            # now its sum from box to col i
            sum_moving_left = [sum(is_there_obj_by_col[:i]) for i in range(x2-x1,0,-1)]
            furthest_we_can_go = sum_moving_left.index(0) if 0 in sum_moving_left else 0
            out = img[:, y1:y2, x1:(x1+furthest_we_can_go)]
            size = furthest_we_can_go * (y2-y1)
        elif dir == 'up':   # actually down bc images have increasing y going downwards but whatever
            is_there_obj_by_col = mask[0, y1:y2, x1:x2].sum(0)
            # now its sum from box to row i
            sum_moving_down = [sum(is_there_obj_by_col[:i]) for i in range(y2-y1, 0, -1)]
            furthest_we_can_go = sum_moving_down.index(0) if 0 in sum_moving_down else 0
            out = img[:, y1:(y1+furthest_we_can_go), x1:x2]
            size = (x2-x1) * furthest_we_can_go
        elif dir == 'down':
            is_there_obj_by_col = mask[0, y1:y2, x1:x2].sum(1)
            # we take the sum from row i upwards (towards bbox) looking for lowest i where all upward sums are 0 (no object)
            sum_moving_up = [sum(is_there_obj_by_col[i:]) for i in range(y2-y1)]
            furthest_we_can_go = sum_moving_up.index(0) if 0 in sum_moving_up else 0
            out = img[:, (y1+furthest_we_can_go):y2, x1:x2]
            size = (x2-x1) * furthest_we_can_go

    return out, size


def repeat_tile_to_fill_bbox(tile, bbox_w, bbox_h, dir):
    out = torch.zeros(3, bbox_h, bbox_w)

    _, tile_h, tile_w = tile.shape
    if dir == 'right':
        num_tile_copies = bbox_w // tile_w
        for i in range(num_tile_copies):
            out[:, :, i*tile_w:min(bbox_w, (i+1)*tile_w)] = tile
        if bbox_w % tile_w != 0:
            out[:, :, (tile_w*num_tile_copies):] = tile[:,:,:(bbox_w % tile_w)]
    elif dir == 'left':
        num_tile_copies = bbox_w // tile_w
        for i in range(num_tile_copies):
            out[:, :, max(0, bbox_w-(i+1)*tile_w):(bbox_w-i*tile_w)] = tile
        if bbox_w % tile_w != 0:
            out[:, :, :(bbox_w % tile_w)] = tile[:,:,-1*(bbox_w % tile_w):]
    if dir == 'up':
        num_tile_copies = bbox_h // tile_h
        for i in range(num_tile_copies):
            out[:, i*tile_h:min(bbox_h, (i+1)*tile_h), :] = tile
        if bbox_h % tile_h != 0:
            out[:, (tile_h*num_tile_copies):, :] = tile[:,:(bbox_h % tile_h),:]
    elif dir == 'down':
        num_tile_copies = bbox_h // tile_h
        for i in range(num_tile_copies):
            out[:, max(0, bbox_h-(i+1)*tile_h):(bbox_h-i*tile_h), :] = tile
        if bbox_h % tile_h != 0:
            out[:, :(bbox_h % tile_h), :] = tile[:,-1*(bbox_h % tile_h):, :]
    return out


def largest_adjacent_tile(img, mask, bbox):
    '''
    Given a bounding box bbox, we check the four adjacent boxes of the same size.
    Each adjacent tile is cut off either at the image boundary or if there is another
    instance of the object (identified via mask). We then return the largest tile.
    '''
    x_min, x_max, y_min, y_max = get_corners(bbox)
    right_tile, size_r = trim_tile(img, mask, x_max, 2*x_max-x_min, y_min, y_max, dir='right')
    left_tile, size_l = trim_tile(img, mask, 2*x_min-x_max, x_min, y_min, y_max, dir='left')
    up_tile, size_u = trim_tile(img, mask, x_min, x_max, y_max, 2*y_max-y_min, dir='up')
    down_tile, size_d = trim_tile(img, mask, x_min, x_max, 2*y_min-y_max, y_max, dir='down')

    max_size_ind = np.argmax([size_r, size_l, size_u, size_d])
    biggest_tile = [right_tile, left_tile, up_tile, down_tile][max_size_ind]

    dirs = ['right', 'left', 'up', 'down']
    out = repeat_tile_to_fill_bbox(biggest_tile, (x_max-x_min), (y_max-y_min), dirs[max_size_ind])
    # print(dirs[max_size_ind])
    return out


def tile(img, mask):
    labels, num_features = scipy.ndimage.label(mask[0, 0])
    for j in range(1,1+num_features):
        labels2 = labels.copy()
        labels2[labels2 != j] = 0
        if labels2.sum() > 0:
            bbox = get_bbox(labels2)
            if bbox.sum() > 0:
                tile = largest_adjacent_tile(img[0], mask[0], bbox)
                x_min, x_max, y_min, y_max = get_corners(bbox)
                img[:, :, x_min:x_max, y_min:y_max] = tile.swapaxes(1,2)
    return img


def eval_under_ablation(model, ablation, dset, bs=32, shuffle=True):
    model = model.eval()  # vendored: .cuda() dropped
    loader = torch.utils.data.DataLoader(dset, batch_size=bs, shuffle=shuffle, num_workers=0)  # vendored
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])

    cc, ctr = 0, 0
    true_class_confidences = []
    for img, mask, label in tqdm(loader, disable=True):
        ablated_img = ablation(img, mask)
        ablated_img, label = [x for x in [ablated_img, label]]  # vendored: .cuda() dropped
        ablated_img = normalize(ablated_img).float()
        logits = model(ablated_img)
        cc += (logits.argmax(1) == label).sum()
        ctr += img.shape[0] if bs > 1 else 1

        probs = torch.softmax(logits, 1)
        true_class_confidences.extend(probs[:,label].flatten().detach().cpu().tolist())

    return (cc/ctr).item(), true_class_confidences


# ---- saliency_analysis.py lines 67-163 ---------------------------------------------------------

def binarize(m, thresh=0.5):
    m = np.array(m)
    m[np.isnan(m)] = 0
    m[m >= thresh] = 1
    m[m < thresh] = 0
    return m


def delta_saliency_density(gcam, mask):
    density_fg = np.sum(gcam * mask) / np.sum(mask)
    density_bg = np.sum(gcam * (1-mask)) / np.sum(1-mask)
    return density_fg - density_bg


def intersection_over_union_and_dice(masks, eps=1e-10, thresh=0.5):
    '''
    takes list of two masks, both can be soft. Binarizes masks with threshold thresh.
    Computes IoU and Dice score, returning both
    '''
    masks = [binarize(m, thresh) for m in masks]
    intersection = masks[0]
    for mask in masks[1:]:
        intersection = intersection * mask
    intersection = np.sum(intersection > 0)
    union = np.sum(np.sum(masks, axis=0) > 0)
    dice = (2*intersection + eps) / (union + intersection + eps) #if union != 0 else NaN
    iou = (intersection + eps) / (union + eps)
    return iou, dice


def compute_scores_one_batch(imgs, masks, target_labels, model, target_layer, cam=None):
    ''' For one batch, visualizes gradcams and returns IOU score '''
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
    targets = [ClassifierOutputTarget(i.item()) for i in target_labels]
    grayscale_cam = cam(input_tensor=imgs, targets=targets, eigen_smooth=False)
    grayscale_cam[np.isnan(grayscale_cam)] = 0

    N = masks.shape[0]
    masks = masks[:,0]
    masks = masks.detach().cpu().numpy()

    ious = [intersection_over_union_and_dice([masks[i], grayscale_cam[i]])[0] for i in range(N)]
    delta_densities = [delta_saliency_density(grayscale_cam[i], masks[i]) for i in range(N)]
    return ious, delta_densities #scores


def compute_salient_alignment_scores(dset, model, target_layer, cam):  # vendored: the CAM object given
    '''
    *** IT IS IMPERATIVE THAT LOADER IS NOT SHUFFLED ***
    '''
    loader = torch.utils.data.DataLoader(dset, batch_size=32, shuffle=False, num_workers=0)  # vendored

    model = model.eval()  # vendored: .cuda() dropped
    all_ious, all_delta_densities = [], []
    dset_ids = []
    ctr = 0
    for imgs, masks, labels in tqdm(loader, disable=True):

        idx_with_masks = (masks.flatten(1).sum(1) != 0)
        dset_ids.extend([ctr + i for i,x in enumerate(idx_with_masks) if x])
        ctr += imgs.shape[0]
        imgs, masks, labels = [x[idx_with_masks] for x in [imgs, masks, labels]]  # vendored: .cuda() dropped
        if masks.shape[0] == 0:
            continue

        ious, delta_densities = compute_scores_one_batch(imgs, masks, labels, model, target_layer, cam)
        all_ious.extend(ious)
        all_delta_densities.extend(delta_densities)
    ious_by_id = dict({i:iou for i, iou in zip(dset_ids, all_ious)})
    delta_densities_by_id = dict({i:iou for i, iou in zip(dset_ids, all_delta_densities)})
    return ious_by_id, delta_densities_by_id
