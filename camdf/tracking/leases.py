"""Claims and heartbeats: one worker computes a cell, whichever of several reach its key.

Claims
------
Several workers (joblib processes, SLURM jobs, machines sharing one server) may
reach the same cell key. Before computing a cell, a worker claims it in the
tracking store itself, so the protocol works wherever the store is shared:

1. It creates a RUNNING run tagged ``cell_key`` plus its identity (``claim.token``,
   ``claim.host``, ``claim.node``, ``claim.pid``, ``claim.pid_start``) and a
   ``claim.heartbeat`` time.
2. It reads every run of the key and takes the ticket ``claim.ticket`` = 1 + the
   largest ticket it saw (Lamport's bakery: a run without a ticket is still
   choosing).
3. It reads the key's runs again until no live claim is still choosing; then the
   live claim with the smallest ``(ticket, run_id)`` wins. A worker whose run was
   created after the winner's ticket was written necessarily draws a larger
   ticket, so two workers never both win while both claims are live.

The winner computes the cell while a thread refreshes its heartbeat; the run
ends FINISHED. A loser deletes its own run (KILLED first) and waits for the
winner's run: FINISHED means the cell is reused; a winner that failed or died
sends it back to step 1. A FINISHED run of the key, seen at any step, ends the
claim. A claim is dead (ignored, and marked KILLED by the next winner) when its
heartbeat is older than the timeout, or at once when it was made on this
machine (same host, boot and pid namespace) by a process that no longer exists,
so the cell of a SIGKILLed worker is taken over by the rerun. Heartbeats use
wall clocks, so machines sharing a server need clocks in step to well within
the timeout (NTP does that), and reads must see every committed write (no read
replica behind the server). A worker whose claim was taken over while it was
still alive (a pause longer than the timeout) does not mark its run FINISHED.
Runs of another ``kind`` (a policy, a sweep, the tables' figures) are not cell runs
and take no part.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from camdf.tracking.locations import portable
from camdf.tracking.runs import CELL, CELL_KEY

CLAIM_TIMEOUT = 300.0  # seconds without a heartbeat after which a claim counts as dead
CLAIM_POLL = 2.0       # seconds between looks at the winner's run while waiting for it

log = logging.getLogger(__name__)


def _proc_start(pid: int) -> str | None:
    """Start time of a live process in clock ticks since boot; None if it is gone or a zombie.

    An empty string means the process exists but ``/proc`` cannot tell its start.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc (macOS): existence only
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ""
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and ')'
    if fields[0] in ("Z", "X"):  # a SIGKILLed worker nobody has reaped yet
        return None
    return fields[19]


def _node() -> str:
    """Where a pid means something: host name, boot id and pid namespace."""
    parts = [socket.gethostname()]
    for read in (lambda: Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
                 lambda: os.readlink("/proc/self/ns/pid")):
        try:
            parts.append(read())
        except OSError:
            parts.append("")
    return "|".join(parts)


def owner_tags(prefix: str) -> dict[str, str]:
    """Who holds a run, as tags ``<prefix>.host``, ``.node``, ``.pid``, ``.pid_start`` and ``.heartbeat`` (now)."""
    return {f"{prefix}.host": socket.gethostname(), f"{prefix}.node": _node(), f"{prefix}.pid": str(os.getpid()),
            f"{prefix}.pid_start": _proc_start(os.getpid()) or "", f"{prefix}.heartbeat": f"{time.time():.3f}"}


def owner_alive(tags: dict[str, str], prefix: str, timeout: float, now: float) -> bool:
    """Whether the holder named by :func:`owner_tags` may still be at work: its heartbeat is younger than
    ``timeout`` and, when it ran on this machine, its process still exists (the same one, not a reused pid)."""
    if now - float(tags.get(f"{prefix}.heartbeat", 0)) > timeout:
        return False
    if tags.get(f"{prefix}.node") == _node():
        start = _proc_start(int(tags.get(f"{prefix}.pid", -1)))
        if start is None or (start and tags.get(f"{prefix}.pid_start") and start != tags[f"{prefix}.pid_start"]):
            return False  # the process is gone, or its pid now belongs to another one
    return True


class _Heartbeat(threading.Thread):
    """Refreshes the tag ``<prefix>.heartbeat`` of a run every ``every`` seconds until stopped."""

    def __init__(self, uri: str, run_id: str, every: float, prefix: str = "claim"):
        super().__init__(name=f"camdf-heartbeat-{run_id[:8]}", daemon=True)
        self.uri, self.run_id, self.every, self.tag = uri, run_id, every, f"{prefix}.heartbeat"
        self._halt = threading.Event()

    def run(self) -> None:
        import mlflow

        client = mlflow.MlflowClient(tracking_uri=self.uri)
        while not self._halt.wait(self.every):
            try:
                client.set_tag(self.run_id, self.tag, f"{time.time():.3f}")
            except Exception as exc:  # a missed beat only matters after the whole timeout
                log.warning("heartbeat of run %s failed: %s", self.run_id, exc)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)


@dataclass
class Claim:
    """The outcome of :meth:`Tracker.claim`.

    Attributes
    ----------
    run : mlflow.entities.Run
        The RUNNING run this worker now holds (``won``), or the key's FINISHED run.
    won : bool
        True when this worker must compute the cell (and end ``run``).
    """

    run: Any
    won: bool
    _heartbeat: _Heartbeat | None = field(default=None, repr=False)

    def release(self) -> None:
        """Stop refreshing the heartbeat (the run itself is left as it is)."""
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None


class ClaimsMixin:
    """The claim protocol (the module docstring) as methods of :class:`~camdf.tracking.client.Tracker`.

    Reads the tracker's ``client``, ``experiment_id``, ``uri``, ``roots``, ``claim_timeout``
    and ``claim_poll``, and its :meth:`finished` and :meth:`_key_runs`.
    """

    def _live(self, run, timeout: float, now: float) -> bool:
        """Whether a run is a claim whose worker may still be computing the cell."""
        tags = run.data.tags
        if run.info.status != "RUNNING" or "claim.token" not in tags:
            return False
        return owner_alive(tags, "claim", timeout, now)

    def _withdraw(self, run_id: str) -> None:
        self.client.set_terminated(run_id, status="KILLED")
        self.client.delete_run(run_id)

    def _await(self, winner_id: str, timeout: float):
        """Wait for another worker's claim: its FINISHED run, or None once it failed or died."""
        from mlflow.exceptions import MlflowException

        while True:
            time.sleep(self.claim_poll)
            try:
                run = self.client.get_run(winner_id)
            except MlflowException:  # purged (mlflow gc): it will never finish
                return None
            if run.info.status == "FINISHED":
                return run
            if not self._live(run, timeout, time.time()):
                return None

    def claim(self, key: str, name: str, tags: dict[str, str] | None = None,
              timeout: float | None = None) -> Claim:
        """Claim a cell key for this worker, or find its FINISHED run (the module docstring has the protocol).

        Blocks while another live worker holds the key.

        Parameters
        ----------
        key, name : str
            Cell key and run name.
        tags : dict, optional
            Tags of the claim run (it becomes the cell's run if this worker wins).
        timeout : float, optional
            Heartbeat timeout for this claim (default ``self.claim_timeout``).

        Returns
        -------
        Claim
            ``won`` with a RUNNING run whose heartbeat is kept fresh until
            :meth:`cell_run` ends it, or not ``won`` with the key's FINISHED run.
        """
        if (tags or {}).get("kind", CELL) != CELL:
            raise ValueError(f"claim: a cell run's kind is {CELL!r}, got {tags['kind']!r}; "
                             "runs of another kind are not cell runs")
        tags = portable({**(tags or {}), "kind": CELL}, self.roots)
        timeout = float(timeout or self.claim_timeout)
        beat_every = max(0.5, min(30.0, timeout / 5))
        ident = {"claim.host": socket.gethostname(), "claim.node": _node(), "claim.pid": str(os.getpid()),
                 "claim.pid_start": _proc_start(os.getpid()) or ""}
        while True:
            done = self.finished(key)
            if done is not None:
                return Claim(done, won=False)
            beat = time.time()
            run = self.client.create_run(self.experiment_id, run_name=name, tags={
                CELL_KEY: key, **tags, **ident, "claim.token": uuid.uuid4().hex,
                "claim.heartbeat": f"{beat:.3f}"})
            rid = run.info.run_id
            try:
                outcome = self._contend(key, rid, beat, beat_every, timeout)
            except BaseException:  # Ctrl-C (or a store error) while contending: the claim run ends KILLED
                try:
                    self._withdraw(rid)
                except Exception:  # noqa: BLE001  the store is gone too; a dead claim is taken over later
                    pass
                raise
            if outcome is not None:
                return outcome

    def _contend(self, key: str, rid: str, beat: float, beat_every: float, timeout: float) -> Claim | None:
        """Steps 2 and 3 of the protocol for this worker's claim run ``rid``: the claim's outcome, or None
        to claim afresh (the winner failed or died, or this claim was taken for dead)."""
        seen = self._key_runs(key)
        tickets = [int(r.data.tags["claim.ticket"]) for r in seen if "claim.ticket" in r.data.tags]
        ticket = 1 + max(tickets, default=0)
        self.client.set_tag(rid, "claim.ticket", str(ticket))
        while True:
            runs = self._key_runs(key)
            done = [r for r in runs if r.info.status == "FINISHED"]
            if done:
                self._withdraw(rid)
                return Claim(done[-1], won=False)
            mine = next((r for r in runs if r.info.run_id == rid), None)
            if mine is None or mine.info.status != "RUNNING":  # taken for dead by another worker
                return None
            now = time.time()
            if now - beat > beat_every:
                beat = now
                self.client.set_tag(rid, "claim.heartbeat", f"{beat:.3f}")
            others = [r for r in runs if r.info.run_id != rid and self._live(r, timeout, now)]
            if any("claim.ticket" not in r.data.tags for r in others):
                time.sleep(0.05)  # someone is still drawing a ticket
                continue
            rank = lambda r: (int(r.data.tags["claim.ticket"]), r.info.run_id)  # noqa: E731
            winner = min([mine, *others], key=rank)
            if winner is mine:
                live = {rid, *(r.info.run_id for r in others)}
                for r in runs:  # dead claims and unclaimed leftovers of killed workers
                    if r.info.status == "RUNNING" and r.info.run_id not in live:
                        self.client.set_tag(r.info.run_id, "claim.taken_over_by", rid)
                        self.client.set_terminated(r.info.run_id, status="KILLED")
                heartbeat = _Heartbeat(self.uri, rid, beat_every)
                heartbeat.start()
                return Claim(mine, won=True, _heartbeat=heartbeat)
            self._withdraw(rid)
            finished = self._await(winner.info.run_id, timeout)
            if finished is not None:
                return Claim(finished, won=False)
            return None  # the winner failed or died: claim afresh
