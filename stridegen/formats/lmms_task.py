"""The lmms-eval task folder that ``stridegen export --format lmms-eval`` writes: its names, shared by the exporter
(stridegen.shards.export.lmms, which writes the folder) and the task functions its ``utils.py`` runs
(stridegen.eval.lsr.lmms_task). Layout::

    <task>.yaml            the task config lmms-eval reads (``--include_path <folder> --tasks <task>``)
    utils.py               the functions the YAML names (``!function utils.<name>``); it imports stridegen
    data/<task>.jsonl      the documents, one spatiotemporal question a line
    images/...             the Set-of-Mark context frames the documents name (paths relative to the folder)
"""

from __future__ import annotations

DATA_DIR = "data"
IMAGES_DIR = "images"
SPLIT = "test"
DEFAULT_TASK = "stridegen_spatiotemporal"
DEFAULT_PROFILE = "strideqa-bench"  # the LSR tolerance profile the task scores with
# The document functions of utils.py, as the YAML names them.
DOC_FUNCTIONS = ("doc_to_visual", "doc_to_text", "doc_to_target", "process_results")
# The task's metrics (each aggregated by utils.aggregate_<metric>): the localization success rate (LSR), the
# success rate per dimension, and the temporal consistency and mean LSR of the complete groups.
DIMENSIONS = ("target_distance", "target_direction", "ego_velocity", "target_velocity")
METRICS = ("lsr", *(f"lsr_{d}" for d in DIMENSIONS), "tlc", "mlsr")
# How the frames and the answer are asked for, unless the YAML's lmms_eval_specific_kwargs say otherwise.
PRE_PROMPT = (
    "The images are frames from a camera of a moving vehicle, oldest first, the last one taken now. "
    "Objects are marked with numbered regions.\n"
)
POST_PROMPT = "\nAnswer in one short sentence that states the number and its unit."
