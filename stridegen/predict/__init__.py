"""`stridegen predict`: vision-language models answer a dataset's questions (docs/predict.md).

The questions come from a built dataset folder or a ``strideqa-bench`` export (``questions``); each is drawn into
its images by the Set-of-Mark renderer and phrased by a prompt profile (``images``, ``prompts``); a ``predictor``
backend of the registry answers them (``openai``: any OpenAI-compatible server; ``transformers``: a local Hugging
Face model); ``job`` runs it scene by scene on the scene-job runner with a reply cache keyed by the request's
content (``cache``), and ``outputs`` writes what the evaluators read.
"""
