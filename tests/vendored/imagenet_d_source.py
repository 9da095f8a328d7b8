# Vendored from github.com/chenshuang-zhang/imagenet_d at commit d8bb2dfdc91dc56ce8d39ae639b1f9cc1a663aac
# (MIT licence, Copyright (c) 2024 Chenshuang Zhang):
# - `ImageNetDLoader`: utils/data_loaders_imgnet_id.py, lines 1-53, verbatim (the dataset
#   evaluate_imagenet_models.py reads; it opens 'preprocessing/imgnet_d2imgnet_id.txt' relative to
#   the working folder, so a test runs it from a folder holding that file);
# - `count_correct`: evaluate_imagenet_models.py, lines 34-45 of `test_model` (the counting of one
#   batch), verbatim but for `.cuda()` (removed: the tests run on the CPU) and the model call
#   (`output = model(images)`, line 33), whose `output.topk(maxk, 1, True, True)` (line 37) is the
#   caller's: it passes the top-5 classes the model gave, best first.
import torch, os
from PIL import Image

import torch
import json
class ImageNetDLoader(torch.utils.data.Dataset):

    def __init__ (self,
                  test_base_dir, few_test=None, transform=None, center_crop=False
                  ):
        super().__init__()

        self.test_path = test_base_dir
        self.categories_list = os.listdir(self.test_path)
        self.categories_list.sort()

        self.file_lists = []
        self.label_lists = []
        self.few_test = few_test

        self.transforms=transform

        with open('preprocessing/imgnet_d2imgnet_id.txt') as f:
            self.dict_imgnet_d2imagenet_id = json.load(f)

        for each in self.categories_list:
            folder_path = os.path.join(self.test_path, each)

            files_names = os.listdir(folder_path)

            for eachfile in files_names:
                image_path = os.path.join(folder_path, eachfile)
                self.file_lists.append(image_path)
                self.label_lists.append(self.dict_imgnet_d2imagenet_id[each]+[-1]*(10-len(self.dict_imgnet_d2imagenet_id[each]))) 

    def __len__(self):
        if self.few_test is not None:
            return self.few_test
        else:
            return len(self.label_lists)

    def _transform(self, sample):
        return self.transforms(sample)

    def __getitem__(self, item):
        path_list=self.file_lists[item]
        img = Image.open(path_list).convert("RGB")

        img_tensor = self._transform(img)
        img.close()
        labels = self.label_lists[item]
        return {"images": img_tensor, "labels": labels, "path": path_list}
    


# evaluate_imagenet_models.py lines 34-45, inside `for sample, example in ...` with
# `top1_cnt`, `top5_cnt`, `cnt` carried between batches.
def count_correct(top5, target, top1_cnt=0, top5_cnt=0, cnt=0):
    """top5: (batch, 5) tensor of the model's top-5 ImageNet classes (`_, pred = output.topk(...)`);
    target: the loader's collated `example['labels']`, a list of 10 tensors of a batch each."""
    maxk = 5  # line 34
    batch_size = target[0].shape[0]  # line 35

    pred = top5[:, :maxk]  # line 37: `_, pred = output.topk(maxk, 1, True, True)`
    pred = pred.t()  # line 38

    for k in range(len(target)):  # line 40
        correct = pred.eq(target[k].view(1, -1).expand_as(pred))  # line 41, less `.cuda()`
        top1_cnt += correct[:1].view(-1).float().sum(0, keepdim=True)  # line 42
        top5_cnt += correct[:5].reshape(-1).float().sum(0, keepdim=True)  # line 43

    cnt += batch_size  # line 45
    return top1_cnt, top5_cnt, cnt
