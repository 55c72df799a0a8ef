"""Data files that stridegen reads at run time, shipped inside the package (wheel and editable installs alike).

``rigs/<name>.yaml``: built-in sensor rigs; ``detector_profiles/simulated.yaml``: error-model profiles of the
``simulated`` detector; ``judges/<method>.yaml`` and ``judges/pricing.yaml``: judge defaults and model prices.
Read them through ``stridegen.core.resources``, never by path arithmetic from ``__file__``.
"""
