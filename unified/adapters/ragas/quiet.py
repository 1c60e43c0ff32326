"""ragas without telemetry and without a stray file: its switches set, its uuid file moved.

ragas writes ``uuid.json`` under ``appdirs.user_data_dir("ragas")`` (``$XDG_DATA_HOME/ragas``
on Linux) even with tracking off: ``ragas._analytics.get_userid`` computes the folder
through the name ``user_data_dir`` bound in that module. We rebind that one name (and
clear ``get_userid``'s cache), so the file lands in ``stray_dir("ragas")`` — the run folder
or a private temp folder — while ``XDG_DATA_HOME`` stays untouched for the rest of the
process. Every path that imports ragas (the backend, the object readers, our metrics
inside ``ragas.evaluate``) calls ``quiet_ragas()`` first.
"""

from __future__ import annotations

from unified.adapters.quiet import quiet_frameworks, stray_dir


def quiet_ragas() -> None:
    """Set the frameworks' switches, then point ragas's uuid file at ``stray_dir("ragas")``
    (imports ``ragas._analytics``, which reads the switches)."""
    quiet_frameworks()
    import ragas._analytics as analytics

    def user_data_dir(appname: str | None = None, *args: object, **kwargs: object) -> str:
        # a folder that does not exist yet: get_userid() creates it without exist_ok
        return str(stray_dir("ragas"))

    analytics.user_data_dir = user_data_dir
    # both are lru_cached: a value computed before we got here must not stick
    analytics.get_userid.cache_clear()
    analytics.do_not_track.cache_clear()
