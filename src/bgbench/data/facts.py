"""What bgbench knows of each dataset layout without reading it, named once: its kind (each
reader's `Layout` declares its `kind` from here), and the names a measure scores a benchmark's
data by (Waterbirds' birds and places, ImageNet-E's levels and their Table 1 columns). A measure
imports these, not the reader of the data."""
from typing import Tuple

# -- the layout kinds -------------------------------------------------------------------------------
IN9 = "in9"
RIVAL10 = "rival10"
GROUPS = "groups"
IMAGENET = "imagenet"
IMAGENET_D = "imagenet_d"
SPAWRIOUS = "spawrious"
HARD_IMAGENET = "hardimagenet"
WATERBIRDS = "waterbirds"
SPURIOUS_IMAGENET = "spurious_imagenet"
SALIENT_IMAGENET = "salient_imagenet"
IMAGENET_E = "imagenet_e"
COUNTERANIMAL = "counteranimal"

# -- Waterbirds (wilds' `WaterbirdsDataset`) ----------------------------------------------------------
WATERBIRDS_CLASSES = ("landbird", "waterbird")  # y
WATERBIRDS_PLACES = ("land", "water")  # place

# -- the ImageNet-E release --------------------------------------------------------------------------
#: The release's folders in Table 1's order (background, size, position, direction), each with the
#: variant bgbench names it (the name of the same level among `bgbench edit`'s folders, where it has
#: one) and Table 1's column.
IMAGENET_E_LEVELS: Tuple[Tuple[str, str, str], ...] = (
    ("ori", "original", "Ori"),
    ("rec", "complexity_0", "Inver (λ = 0)"),
    ("20_smooth", "complexity_-20", "λ = -20"),
    ("20_hard", "complexity_20", "λ = 20"),
    ("20_adv", "complexity_adv", "λ = 20 (adversarial)"),
    ("random_bg", "background_random", "Random bg"),
    ("full", "size_full", "Full"),
    ("01", "size_0.1", "0.1"),
    ("008", "size_0.08", "0.08"),
    ("005", "size_0.05", "0.05"),
    ("rp", "position_random", "rp"),
    ("rd", "rotation_random", "rd"),
)
#: variant -> Table 1's column
IMAGENET_E_COLUMN_OF = {variant: column for _, variant, column in IMAGENET_E_LEVELS}
