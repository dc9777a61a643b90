"""The retry loop: attempts until one brings a usable reply, a failure is final, or the
retries or the sample's time run out."""

from __future__ import annotations

from typing import TypeVar

import aiohttp

from execbench.models.base import GenerateConfig, ModelError
from execbench.models.http.attempt import OUT_OF_QUOTA, Failure, attempt
from execbench.models.http.endpoints import Endpoint, Endpoints, one_line
from execbench.models.http.replies import Reader
from execbench.models.http.systematic import FirstFailures
from execbench.models.http.timing import Clock, Deadline, retry_delay

T = TypeVar("T")


class RequestFailed(Exception):
    """No usable response was obtained; ``attempts`` says how many requests were sent and
    ``endpoint`` where the last one went."""

    def __init__(self, message: str, attempts: int, endpoint: Endpoint) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.endpoint = endpoint


class OutOfQuota(ModelError):
    """The API refused a request because the account is out of quota.

    Every further request would be refused the same way, so this stops the run (the CLI
    reports a :class:`ModelError` as one clear error) instead of each sample backing off
    and failing on its own; the samples already logged are kept, and running the same
    command again resumes once there is credit.
    """


async def post(
    session: aiohttp.ClientSession,
    endpoints: Endpoints,
    data: bytes,
    headers: dict[str, str],
    config: GenerateConfig,
    read: Reader[T],
    attempt_timeout: float,
    clock: Clock,
    watch: FirstFailures | None = None,
) -> tuple[T, int, Endpoint]:
    """POST ``data`` (JSON) and return ``(read(response), attempts, endpoint)``.

    Each attempt goes to the endpoint :meth:`Endpoints.pick` chooses, so a retry may go to
    another replica. A 2xx reply that ``read`` finds unusable is treated like a server
    error and retried. At most ``config.max_retries`` retries are made, and none starts
    after ``config.sample_deadline``; 4xx statuses other than 408/429 mean the request
    itself is wrong and fail at once. Raises :class:`RequestFailed` describing the last
    failure, :class:`OutOfQuota` at the first out-of-quota reply, or :class:`Unreachable`
    when the circuit breaker trips.

    ``attempt_timeout`` bounds each wait for data, not the whole reply (like httpx's read
    timeout): for a streamed reply the gap between events, for a whole one the time the
    server takes to send it. Waiting for a free pooled connection is not the server being
    slow, so it is not bounded by it; otherwise a deep queue would turn into timeouts. No
    attempt or back-off starts after the sample's deadline, and a stream is cut at it; a
    whole reply under way is bounded by ``attempt_timeout`` alone (an aiohttp ``total``
    timeout would add a timer to every request, a tenth of the client's time per request
    at hundreds of connections). Waits and deadlines are read from ``clock``.

    ``watch``, the run's :class:`FirstFailures`, sees every outcome until a request is
    answered, and raises :class:`SystematicFailure` once every request fails the same way.
    """
    deadline = Deadline.starting_now(config.sample_deadline, clock)
    sample = watch.begin() if watch is not None else 0
    attempts = 0
    while True:
        attempts += 1
        endpoint = endpoints.pick(clock.monotonic())
        outcome = await attempt(session, endpoint, data, headers, read, attempt_timeout,
                                deadline)
        if not isinstance(outcome, Failure):
            endpoints.done(endpoint, clock.monotonic(), healthy=True, connected=True)
            if watch is not None:
                watch.success()
            return outcome, attempts, endpoint
        endpoints.done(endpoint, clock.monotonic(), healthy=outcome.healthy,
                       connected=outcome.connected, failure=outcome.line())
        if outcome.quota is not None:
            raise OutOfQuota(
                f"the API refused {endpoint.url} as out of quota (HTTP 429 {OUT_OF_QUOTA}: "
                f"{one_line(outcome.quota)}); add credit or use another key, then run the "
                "same command again to resume")
        endpoints.check_breaker(config.max_connection_failures)
        if watch is not None:
            watch.failure(sample, attempts, outcome)
        delay = retry_delay(attempts, config, outcome.wait)
        # A replica that cannot be reached says nothing about the others: go there at once.
        if not outcome.connected and endpoints.elsewhere(endpoint, clock.monotonic()):
            delay = 0.0
        if not outcome.retryable or attempts > config.max_retries or deadline.passed(delay):
            if watch is not None:
                await watch.hold(outcome)
            noun = "attempt" if attempts == 1 else "attempts"
            raise RequestFailed(f"{outcome.summary} after {attempts} {noun}: "
                                f"{one_line(outcome.detail)}", attempts, endpoint)
        if delay:
            await clock.sleep(delay)
