"""stridegen: spatiotemporal VQA datasets from driving logs."""

__version__ = "0.1.0"

