"""Judge prompt templates, in our own wording, with a version string per method.

Bump a method's ``TEMPLATE_VERSION`` whenever its wording changes: the version is part of every request hash,
so cached verdicts of an older template are never reused for a new one.
"""
