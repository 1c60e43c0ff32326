"""Every LLM and embedding call of every backend goes through here."""

from unified.judge.base import (CallRecord, ChatJudge, Embedder, JudgeConnectionError, JudgeError,
                                JudgeHTTPError, JudgeLengthError, JudgeNotConfiguredError,
                                JudgeOutputError, Judges, JudgeTimeoutError, TaskMeter,
                                add_listener, current_meter, record_call, remove_listener,
                                task_scope)
