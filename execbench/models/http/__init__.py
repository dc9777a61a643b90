"""The client the HTTP providers share, split by concern: retry timing and the clock
(``timing``), the servers and their health (``endpoints``), reading a reply (``replies``)
and a streamed one (``sse``), one attempt (``attempt``), the retry loop (``retry``), and the
model the providers subclass (``model``).

Only what the providers and callers use is named here; the rest is imported from its
module.
"""

from execbench.models.http.model import STREAM_ABOVE, HttpModel, parse_model_args
from execbench.models.http.replies import MalformedReply
from execbench.models.http.retry import OutOfQuota
from execbench.models.http.sse import Assembly
from execbench.models.http.timing import SYSTEM_CLOCK, Clock

__all__ = [
    "STREAM_ABOVE",
    "SYSTEM_CLOCK",
    "Assembly",
    "Clock",
    "HttpModel",
    "MalformedReply",
    "OutOfQuota",
    "parse_model_args",
]
