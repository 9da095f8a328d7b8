"""Provenance: where a run came from (kind, model spec, config, data root and fingerprint, seed),
built in one place (`Provenance.of`), and how every listing names a run's model (`model_label`).
Pure: it reads what the model and the data say of themselves and never touches the store
(`recording` writes it), so a measure builds its provenance without reaching the store's code."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

from .classes import class_name_mismatch


@dataclass
class Provenance:
    """Where a run came from: what the store keeps beside its results."""

    kind: str
    config: Dict[str, Any]
    model: Optional[str] = None
    spec: Optional[Dict[str, Any]] = None
    data_root: Optional[str] = None
    data_fingerprint: Optional[str] = None
    seed: Optional[int] = None

    @classmethod
    def of(cls, kind: str, config: dict, model=None, layout=None, seed: Optional[int] = None,
           data_root: Optional[str] = None, data_fingerprint: Optional[str] = None) -> "Provenance":
        """The one way to build provenance, for every kind of run.

        The data root is recorded as an absolute path, so that a later command run from another
        folder (an analysis that reads the boxes, the report) finds the data; the fingerprint
        stays the dataset's identity. When the model records the class folders it was trained on
        and they differ from the dataset's, the config says so (`class_names_mismatch`); when a
        1000-class model read the data through a class map other than IN-9's (RIVAL10's, or a
        `--class-map` file), the config holds that map (`class_map`); when the forward ran
        channels-last or compiled, the config lists it (`speedups`); what the model was fed (the
        images' size, its input size, resized or not) is `input`, and how it was built
        (`models.options.identity`) is `model_options`.

        Args:
            model: the model the run used: a `BgModel`, a `ModelSpec`, or a spec dict (a checkpoint
                read back from disk); None for runs without a model (build, synth).
            layout: the data `Layout`: its root, fingerprint and classes are recorded.
            data_root, data_fingerprint: the data of a run known only from its records (a training
                run read back from its files); a layout's values take precedence.
        """
        spec = _spec_dict(model)
        class_map = getattr(model, "class_map", None)
        said = {"speedups": list(getattr(model, "speedups", None) or ()) or None,  # --channels-last, --compile: the
                # forward that made the numbers; a 1000-class model read this dataset through a map other than IN-9's
                "class_map": None if class_map is None else class_map.to_config(),
                # the images' size, the model's, and whether they were resized to it
                "input": getattr(model, "input_record", None) or None,
                # how the model was built, as far as that changes numbers (a study compares it)
                "model_options": getattr(model, "identity", None)}
        config = {**config, **{k: v for k, v in said.items() if v is not None}}
        if data_root is not None:
            data_root = str(Path(data_root).resolve())
        if layout is not None:
            data_root, data_fingerprint = str(Path(layout.root).resolve()), layout.fingerprint()
            config = {**config, "classes": list(layout.classes), "data_kind": layout.kind}
            mismatch = class_name_mismatch((spec or {}).get("class_names"), layout.classes)
            if mismatch is not None:
                config["class_names_mismatch"] = mismatch
        return cls(kind=kind, config=config, model=spec["name"] if spec else None, spec=spec, seed=seed,
                   data_root=data_root, data_fingerprint=data_fingerprint)


def _spec_dict(model) -> Optional[Dict[str, Any]]:
    if model is None or isinstance(model, dict):
        return model
    return getattr(model, "spec", model).to_dict()  # a BgModel carries its ModelSpec
