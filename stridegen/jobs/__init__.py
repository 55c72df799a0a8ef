"""The jobs of the commands that process scenes, each a short declaration over the engine (``stridegen.run``): its
output folder and config hash, the task a worker runs per scene, and what is written once every scene ran. The
domain work of a scene lives in its layer (logs, pipeline, augment, shards); ``stridegen predict``'s job is in
``stridegen.predict.job``."""
