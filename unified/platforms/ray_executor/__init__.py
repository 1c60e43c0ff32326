"""Past one machine: the same run on a Ray cluster (``evaluate(..., executor="ray")``,
``unified-eval run ... --executor ray [--ray-address ADDR]``).

The driver reads the samples and writes the run folder, exactly as a local run does; a
pool of Ray actors, each with its own backends and judges built once from picklable
recipes, scores blocks of task groups with the same ``score_group`` the local executor
uses. Ray is imported only when this executor is chosen (extra ``ray``).

Parts: ``recipes`` (what an actor rebuilds, the cache protocol, how limits are divided),
``worker`` (the actor), ``driver`` (``RayExecutor``: pool, blocks, exactly-once delivery).
"""

from unified.platforms.ray_executor.driver import (
    INSTALL_HINT,
    MAX_ATTEMPTS,
    Block,
    RayExecutor,
    RayUnavailableError,
    connect,
    import_ray,
)
from unified.platforms.ray_executor.recipes import (
    CacheStore,
    RayExecutorError,
    SQLiteCacheFactory,
    divided,
    max_actors,
    run_recipe,
    share,
)

__all__ = [
    "INSTALL_HINT",
    "MAX_ATTEMPTS",
    "Block",
    "CacheStore",
    "RayExecutor",
    "RayExecutorError",
    "RayUnavailableError",
    "SQLiteCacheFactory",
    "connect",
    "divided",
    "import_ray",
    "max_actors",
    "run_recipe",
    "share",
]
