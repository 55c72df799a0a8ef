"""stridegen: spatiotemporal VQA datasets from driving logs."""

__version__ = "0.1.0"  # the one version source: pyproject.toml reads it ([tool.setuptools.dynamic])


def __getattr__(name: str):
    # Lazy: `stridegen.open_dataset` without importing h5py and the shard modules at package import time.
    if name == "open_dataset":
        from stridegen.shards.reader import open_dataset

        return open_dataset
    raise AttributeError(f"module 'stridegen' has no attribute {name!r}")
