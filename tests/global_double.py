"""A test double of a DynamoDB global table: two DynamoDB Local servers and a replicator between them.

Each server stands for one region. Tables created through :meth:`GlobalTableDouble.create_table`
exist on every server with DynamoDB Streams on (``NEW_AND_OLD_IMAGES``). A thread in the test
process reads every shard of every such stream and applies each change to the other regions,
as the default (multi-region eventual consistency) mode of global tables does:

- every replica accepts writes, and conditions are checked against the local replica only;
- items replicate one by one, ``delay`` seconds after the change was seen;
- the last writer wins. Each change is stamped with the time the replicator first read it from
  its region's stream (ties broken by region order); for every key the replicator keeps the
  stamp of the version each replica holds, and a change older than that is dropped. A change is
  applied with a condition that the replica still holds what the replicator last saw there, so a
  local write it has not read yet (which will be stamped later, hence wins) is never overwritten;
- its own writes are not sent back: what it applied to a replica is remembered, and the stream
  record of that write is recognised by its image and skipped.

:meth:`GlobalTableDouble.settle` waits until every stream is drained and every change applied.
"""

from __future__ import annotations

import heapq
import itertools
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import botocore.session  # type: ignore[import-untyped, unused-ignore]
from botocore.config import Config  # type: ignore[import-untyped, unused-ignore]
from botocore.exceptions import ClientError  # type: ignore[import-untyped, unused-ignore]

from tests.engine import DynamoDBLocal

__all__ = ["REGIONS", "GlobalTableDouble", "TableSet"]

REGIONS = ("us-east-1", "eu-west-1")
"""The regions the double stands for, in tie-break order (the first wins a tie)."""

Image = Optional[Dict[str, Any]]
"""An item in DynamoDB's attribute-value form, or None for no item."""

_DESCRIBE_EVERY = 1.0
"""Seconds between two DescribeStream calls looking for new shards of one stream."""


def _client(service: str, url: str, region: str) -> Any:  # noqa: ANN401 - botocore clients are untyped
    """A botocore client for ``service`` at ``url``: dummy credentials, no proxies."""
    config = Config(connect_timeout=2, read_timeout=10, retries={"total_max_attempts": 5, "mode": "standard"},
                    proxies={}, max_pool_connections=4)
    return botocore.session.get_session().create_client(
        service, endpoint_url=url, region_name=region, aws_access_key_id="local",
        aws_secret_access_key="local", config=config)  # noqa: S106 - not a secret


def _canon(value: Any) -> Any:  # noqa: ANN401 - attribute values are JSON-like
    """``value`` with its sets sorted, so two images of one item compare equal."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out[k] = sorted(v) if k in ("SS", "NS", "BS") else _canon(v)
        return out
    if isinstance(value, list):
        return [_canon(v) for v in value]
    return value


def _key_text(keys: Dict[str, Any]) -> str:
    """One string per item key."""
    return json.dumps(keys, sort_keys=True, default=str)


@dataclass
class _Stream:
    """One table's stream on one region: the shards being read and where each one is."""

    region: str
    table: str
    arn: str
    iterators: Dict[str, Optional[str]] = field(default_factory=dict)
    """Open shards and their next iterator (None: to be asked for)."""
    last: Dict[str, str] = field(default_factory=dict)
    """The sequence number of the last record read from each shard."""
    finished: Set[str] = field(default_factory=set)
    described: float = 0.0


@dataclass(order=True)
class _Change:
    """A change read from ``origin``'s stream, to be applied to ``target`` once ``due``."""

    due: float
    seq: int
    target: str = field(compare=False)
    origin: str = field(compare=False)
    table: str = field(compare=False)
    keys: Dict[str, Any] = field(compare=False)
    new: Image = field(compare=False)
    stamp: Tuple[float, int] = field(compare=False)


class GlobalTableDouble:
    """Two (or more) DynamoDB Local servers, one per region, and a replicator between their tables.

    ``with GlobalTableDouble(jar) as double:`` starts the servers and the replicator;
    ``double.url("eu-west-1")`` is a region's endpoint; ``double.delay`` the seconds a change
    waits before it is applied to the other regions (settable at any time).
    """

    def __init__(self, jar: Path, regions: Sequence[str] = REGIONS, delay: float = 0.0, poll: float = 0.02) -> None:
        self.regions = tuple(regions)
        self.delay = delay
        """Seconds between reading a change from its region's stream and applying it elsewhere."""
        self.poll = poll
        self.servers = {region: DynamoDBLocal(jar) for region in self.regions}
        self.applied = 0
        """Changes written to another region."""
        self.dropped = 0
        """Changes not applied because the target held a newer version (last writer wins)."""
        self.echoes = 0
        """Stream records of the replicator's own writes, recognised and not sent back."""
        self.restarts = 0
        """Shard iterators the streams refused (trimmed or expired) and that were taken again."""
        self._clients: Dict[str, Any] = {}
        self._streams_clients: Dict[str, Any] = {}
        self._streams: Dict[str, Dict[str, _Stream]] = {}
        self._hash_keys: Dict[str, str] = {}
        self._pending: List[_Change] = []
        self._seq = itertools.count()
        self._last_stamp = 0.0
        self._held: Dict[Tuple[str, str, str], Tuple[float, int]] = {}
        self._images: Dict[Tuple[str, str, str], Any] = {}
        self._expected: Dict[Tuple[str, str, str], List[Any]] = {}
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._cycles = 0
        self._quiet = 0
        self._error: Optional[BaseException] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> None:
        """Start every region's server, then the replicator thread."""
        try:
            for region, server in self.servers.items():
                server.start()
                self._clients[region] = _client("dynamodb", server.url, region)
                self._streams_clients[region] = _client("dynamodbstreams", server.url, region)
        except BaseException:
            self.stop()
            raise
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="global-table-replicator", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the replicator and the servers (safe to call twice)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        for server in self.servers.values():
            server.stop()
        self._clients.clear()
        self._streams_clients.clear()

    def __enter__(self) -> GlobalTableDouble:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- regions and tables ---------------------------------------------------

    def url(self, region: str) -> str:
        """The endpoint of ``region``'s server."""
        return self.servers[region].url

    def meta(self, region: str) -> Dict[str, Any]:
        """The PynamoDB ``Meta`` settings that reach ``region``'s server."""
        return {"region": region, "host": self.url(region),
                "aws_access_key_id": "local", "aws_secret_access_key": "local"}

    def client(self, region: str) -> Any:  # noqa: ANN401 - botocore clients are untyped
        """A botocore DynamoDB client for ``region``'s server."""
        return self._clients[region]

    def create_table(self, name: str, hash_key: Tuple[str, str], range_key: Optional[Tuple[str, str]] = None) -> None:
        """Create table ``name`` in every region, streams on, and replicate it from now on.

        ``hash_key`` and ``range_key`` are (attribute name, ``"S"``/``"N"``/``"B"``).
        """
        keys = [(hash_key, "HASH")] + ([(range_key, "RANGE")] if range_key else [])
        streams: Dict[str, _Stream] = {}
        for region in self.regions:
            out = self._clients[region].create_table(
                TableName=name,
                KeySchema=[{"AttributeName": k[0], "KeyType": kind} for k, kind in keys],
                AttributeDefinitions=[{"AttributeName": k[0], "AttributeType": k[1]} for k, _ in keys],
                BillingMode="PAY_PER_REQUEST",
                StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
            )
            streams[region] = _Stream(region, name, out["TableDescription"]["LatestStreamArn"])
        with self._lock:
            self._hash_keys[name] = hash_key[0]
            self._streams[name] = streams

    def delete_table(self, name: str) -> None:
        """Stop replicating table ``name`` and delete it in every region."""
        with self._lock:
            self._streams.pop(name, None)
            self._hash_keys.pop(name, None)
            self._pending = [c for c in self._pending if c.table != name]
            heapq.heapify(self._pending)
            for state in (self._held, self._images, self._expected):
                for k in [k for k in state if k[1] == name]:
                    del state[k]
        for region in self.regions:
            try:
                self._clients[region].delete_table(TableName=name)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ResourceNotFoundException":
                    raise

    def tables(self) -> TableSet:
        """A set of tables with unique names, all deleted by its :meth:`TableSet.close`."""
        return TableSet(self)

    def items(self, region: str, table: str) -> List[Dict[str, Any]]:
        """Every item of ``table`` in ``region`` (a consistent scan), in attribute-value form."""
        found: List[Dict[str, Any]] = []
        kwargs: Dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        while True:
            page = self._clients[region].scan(**kwargs)
            found.extend(page["Items"])
            if "LastEvaluatedKey" not in page:
                return found
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    # -- waiting --------------------------------------------------------------

    def settle(self, timeout: float = 60.0) -> None:
        """Wait until every stream is drained and every change applied (three quiet rounds in a row).

        Raises TimeoutError when replication does not settle within ``timeout`` seconds,
        and re-raises an error that stopped the replicator.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            start = self._cycles
            while True:
                if self._error is not None:
                    raise RuntimeError("the replicator stopped") from self._error
                if self._cycles >= start + 3 and self._quiet >= 3:
                    return
                left = deadline - time.monotonic()
                if left <= 0 or self._thread is None:
                    raise TimeoutError(f"replication did not settle in {timeout} s "
                                       f"({len(self._pending)} changes waiting)")
                self._cond.wait(min(left, 0.5))

    # -- the replicator thread ------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                read = self._read_streams()
                self._apply_due()
                with self._lock:
                    waiting = len(self._pending)
                    next_due = self._pending[0].due if self._pending else None
                with self._cond:
                    self._cycles += 1
                    self._quiet = self._quiet + 1 if read == 0 and waiting == 0 else 0
                    self._cond.notify_all()
                if read == 0:
                    pause = self.poll if next_due is None else min(self.poll, max(0.0, next_due - time.monotonic()))
                    self._stop.wait(pause)
        except BaseException as exc:  # noqa: BLE001 - handed to settle()
            with self._cond:
                self._error = exc
                self._cond.notify_all()

    def _read_streams(self) -> int:
        """Read every open shard of every stream once; return how many records were read."""
        with self._lock:
            streams = [s for by_region in self._streams.values() for s in by_region.values()]
        read = 0
        for stream in streams:
            try:
                read += self._read_stream(stream)
            except ClientError:
                with self._lock:
                    gone = stream.table not in self._streams
                if not gone:
                    raise
        return read

    def _read_stream(self, stream: _Stream) -> int:
        client = self._streams_clients[stream.region]
        now = time.monotonic()
        if now - stream.described >= _DESCRIBE_EVERY or not stream.iterators:
            stream.described = now
            self._find_shards(stream)
        read = 0
        for shard_id, iterator in list(stream.iterators.items()):
            if iterator is None:
                after = stream.last.get(shard_id)
                where = ({"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": after} if after
                         else {"ShardIteratorType": "TRIM_HORIZON"})
                iterator = client.get_shard_iterator(StreamArn=stream.arn, ShardId=shard_id, **where)["ShardIterator"]
            try:
                out = client.get_records(ShardIterator=iterator, Limit=1000)
            except ClientError as exc:
                # DynamoDB Local sometimes refuses an iterator taken on an empty shard once records arrive,
                # or one it has outlived: start again after the last record read.
                if exc.response["Error"]["Code"] not in ("TrimmedDataAccessException", "ExpiredIteratorException"):
                    raise
                stream.iterators[shard_id] = None
                self.restarts += 1
                read += 1  # not quiet: read this shard again
                continue
            for record in out["Records"]:
                self._on_record(stream, record)
                stream.last[shard_id] = record["dynamodb"]["SequenceNumber"]
            read += len(out["Records"])
            if out.get("NextShardIterator"):
                stream.iterators[shard_id] = out["NextShardIterator"]
            else:
                del stream.iterators[shard_id]
                stream.finished.add(shard_id)
                stream.described = 0.0
        return read

    def _find_shards(self, stream: _Stream) -> None:
        """Open the stream's new shards, each once its parent shard is read to its end."""
        client = self._streams_clients[stream.region]
        shards: List[Dict[str, Any]] = []
        kwargs: Dict[str, Any] = {"StreamArn": stream.arn}
        while True:
            desc = client.describe_stream(**kwargs)["StreamDescription"]
            shards.extend(desc["Shards"])
            if not desc.get("LastEvaluatedShardId"):
                break
            kwargs["ExclusiveStartShardId"] = desc["LastEvaluatedShardId"]
        known = {s["ShardId"] for s in shards}
        for shard in shards:
            sid = shard["ShardId"]
            if sid in stream.iterators or sid in stream.finished:
                continue
            parent = shard.get("ParentShardId")
            if parent is None or parent in stream.finished or parent not in known:
                stream.iterators[sid] = None

    def _stamp(self, region: str) -> Tuple[float, int]:
        """A write timestamp later than every one given before, tie-broken by region order."""
        self._last_stamp = max(time.time(), self._last_stamp + 1e-6)
        return (self._last_stamp, -self.regions.index(region))

    def _on_record(self, stream: _Stream, record: Dict[str, Any]) -> None:
        """A change read from ``stream``: an echo of the replicator's own write, or a local write to send on."""
        data = record["dynamodb"]
        keys = data["Keys"]
        new: Image = data.get("NewImage") if record["eventName"] != "REMOVE" else None
        slot = (stream.region, stream.table, _key_text(keys))
        with self._lock:
            if stream.table not in self._streams:
                return
            expected = self._expected.get(slot)
            if expected:
                # Records of one key come in order: until the echo of the replicator's last
                # write arrives, what arrives was written before it, so that write replaced it.
                canon = _canon(new)
                if canon in expected:
                    del expected[: expected.index(canon) + 1]
                    self.echoes += 1
                else:
                    self.dropped += 1
                return
            self._images[slot] = new
            stamp = self._stamp(stream.region)
            self._held[slot] = stamp
            due = time.monotonic() + self.delay
            for target in self.regions:
                if target != stream.region:
                    heapq.heappush(self._pending, _Change(due, next(self._seq), target, stream.region,
                                                          stream.table, keys, new, stamp))

    def _apply_due(self) -> None:
        """Apply every change whose delay has passed, last writer wins."""
        while True:
            with self._lock:
                if not self._pending or self._pending[0].due > time.monotonic():
                    return
                change = heapq.heappop(self._pending)
                if change.table not in self._streams:
                    continue
                slot = (change.target, change.table, _key_text(change.keys))
                held = self._held.get(slot)
                known = self._images.get(slot)
                hash_key = self._hash_keys[change.table]
            if held is not None and held > change.stamp:
                with self._lock:
                    self.dropped += 1
                continue
            if _canon(known) == _canon(change.new):
                with self._lock:
                    self._held[slot] = change.stamp
                continue
            if self._write(change, known, hash_key):
                with self._lock:
                    self._held[slot] = change.stamp
                    self._images[slot] = change.new
                    self._expected.setdefault(slot, []).append(_canon(change.new))
                    self.applied += 1
            else:
                with self._lock:
                    self.dropped += 1

    def _write(self, change: _Change, known: Image, hash_key: str) -> bool:
        """Write ``change`` to its target if the target still holds ``known``; False if it does not."""
        names: Dict[str, str] = {}
        values: Dict[str, Any] = {}
        if known is None:
            names["#k"] = hash_key
            condition = "attribute_not_exists(#k)"
        else:
            terms = []
            for i, (name, value) in enumerate(sorted(known.items())):
                names[f"#a{i}"] = name
                values[f":v{i}"] = value
                terms.append(f"#a{i} = :v{i}")
            condition = " AND ".join(terms)
        kwargs: Dict[str, Any] = {"TableName": change.table, "ConditionExpression": condition,
                                  "ExpressionAttributeNames": names}
        if values:
            kwargs["ExpressionAttributeValues"] = values
        client = self._clients[change.target]
        try:
            if change.new is None:
                client.delete_item(Key=change.keys, **kwargs)
            else:
                client.put_item(Item=change.new, **kwargs)
        except ClientError as exc:
            code = exc.response["Error"]["Code"]
            if code == "ConditionalCheckFailedException":
                return False
            if code == "ResourceNotFoundException":
                with self._lock:
                    if change.table not in self._streams:
                        return False
            raise
        return True


class TableSet:
    """Replicated tables with unique names, created through one double and deleted together."""

    def __init__(self, double: GlobalTableDouble) -> None:
        self.double = double
        self.names: List[str] = []

    def create(self, stem: str, hash_key: Tuple[str, str] = ("id", "N"),
               range_key: Optional[Tuple[str, str]] = None) -> str:
        """Create a replicated table named ``stem`` plus a unique suffix, and return its name."""
        name = f"{stem}-{uuid.uuid4().hex[:10]}"
        self.double.create_table(name, hash_key, range_key)
        self.names.append(name)
        return name

    def close(self) -> None:
        """Delete every table of the set in every region."""
        for name in self.names:
            self.double.delete_table(name)
        self.names.clear()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)
