"""The embedchain backend: the room's facts run by an isolated backend (embedchain is never
installed in this environment; ``unified.adapters.isolated`` builds its own and drives it
through a worker)."""

from __future__ import annotations

from unified.adapters.embedchain import FACTS
from unified.adapters.isolated.backend import IsolatedBackend

#: the class of ``--backend embedchain`` (one isolated class per name)
EmbedchainBackend = IsolatedBackend.bound_to(FACTS)
