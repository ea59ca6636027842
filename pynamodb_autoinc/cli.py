"""``pynamodb-autoinc``: look at and fix counters without writing code.

    pynamodb-autoinc [--host URL] [--region R] [--table NextId] COMMAND [--model package.module:Model] ...

Commands: ``create-table``, ``list``, ``describe``, ``get``, ``set``, ``restart``, ``alter``, ``seed``,
``check``, ``policy``.
A model is named with ``--model package.module:Model`` (``seed``, ``check``
and ``policy`` still take it positionally, deprecated, until the next
release); its Meta settings pick the endpoint, the counter table and the
counter key, unless ``--host`` or ``--region`` say otherwise. ``--host``,
``--region`` and ``--table`` may follow the command too. ``seed``, ``set``,
``restart`` and ``alter`` take ``--dry-run``: they print what would change
and write nothing. ``-v`` shows the library's log on stderr (``-vv``: every
step). ``--version`` prints the version.

Exit codes: 0 done, 1 an error (its message on stderr), 2 bad usage, 3 a
problem found in the data, reported in full: ``check`` found duplicates (or
holes in a gapless sequence), or ``list`` found a counter that holds no
integer, or ``describe`` found a counter recording other options than its model, or holding no integer.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, TextIO, Tuple, Type, TypeVar

from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.exceptions import PynamoDBException
from pynamodb.expressions.operand import Path
from pynamodb.models import Model

from . import _transport, regions
from ._options import Options, options_for
from .counter import NextId, bind_counter, check_region_value, setval_value
from .exceptions import (
    ConfigurationError,
    CounterTableMissingError,
    CounterValueError,
    GlobalTableError,
    error_code,
    error_responses,
)
from .mixin import AutoIncrementMixin
from .sequence import SequenceOptions, integer, number

EXIT_ERROR, EXIT_PROBLEMS = 1, 3

_T = TypeVar("_T", bound=Model)

log = logging.getLogger(__name__)


class CommandError(Exception):
    """A problem the command reports on stderr, exiting with status 1."""


class NotDynamoDBError(CommandError):
    """The endpoint answered, but not as DynamoDB does (an HTML page, another service)."""

    def __init__(self, status: int, content_type: str) -> None:
        super().__init__(f"HTTP {status}, {content_type or 'no Content-Type'}")
        self.status, self.content_type = status, content_type


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    _resolve_model(parser, args)
    try:
        try:
            with _answers_checked(), _logged(args.verbose):
                return int(args.run(args) or 0)
        except (PynamoDBException, *BOTOCORE_EXCEPTIONS) as exc:
            html = _html_answer(exc)
            if html is not None:
                raise html from exc
            raise
    except NotDynamoDBError as exc:
        print(f"error: the endpoint {_endpoint(args)} did not answer as DynamoDB ({exc}); check --host (or the "
              "model's Meta.host): it must be the URL of DynamoDB or DynamoDB Local", file=sys.stderr)
        return EXIT_ERROR
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except (PynamoDBException, ValueError, *BOTOCORE_EXCEPTIONS) as exc:
        print(f"error: {str(exc).rstrip('.')}{_fix_for(exc)}", file=sys.stderr)
        return EXIT_ERROR


@contextlib.contextmanager
def _logged(verbose: int) -> Iterator[None]:
    """With -v, the ``pynamodb_autoinc`` log at INFO (with -vv, DEBUG) goes to stderr while the command runs."""
    if not verbose:
        yield
        return
    logger = logging.getLogger("pynamodb_autoinc")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _resolve_model(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--model``, or the deprecated positional model of seed, check and policy (with a note on stderr)."""
    if not hasattr(args, "old_model"):
        return
    old = args.old_model
    if old is not None:
        if args.model is not None and args.model != old:
            parser.error(f"{args.command}: the model is named twice ({old!r} and --model {args.model!r}); "
                         "name it once, with --model")
        print(f"DeprecationWarning: `{args.command} MODEL` is deprecated and will be removed in the next release; "
              f"name the model with `{args.command} --model {old}`", file=sys.stderr)
        args.model = old
    if args.model is None:
        parser.error(f"{args.command}: name the model with --model package.module:Model")


def _endpoint(args: argparse.Namespace) -> str:
    """The endpoint the command talked to, as the user named it."""
    if args.host:
        return str(args.host)
    spec = getattr(args, "model", None)
    if isinstance(spec, str):
        with contextlib.suppress(Exception):
            host = getattr(load_model(spec).Meta, "host", None)
            if host:
                return str(host)
    region = args.region or os.environ.get("AWS_DEFAULT_REGION")
    return f"of DynamoDB in {region}" if region else "of DynamoDB"


@contextlib.contextmanager
def _answers_checked() -> Iterator[None]:
    """While the command runs, an answer that is not DynamoDB's JSON raises :class:`NotDynamoDBError`.

    DynamoDB (and DynamoDB Local, and moto) answer every request, errors
    included, with a JSON body; an HTML page means the endpoint is some other
    server. botocore would otherwise report it as an error coded with the
    HTTP status and the page as its message, or, for a 200 answer, as an
    empty result.

    :func:`_watched` registers the check on the client of each table the
    command reaches (a handler of the client's own events: nothing of
    PynamoDB or botocore is replaced); it is unregistered when the command
    ends, so that a command run in a process leaves its models' clients as
    they were.
    """
    watched: List[Any] = []
    _WATCHING.append(watched)
    try:
        yield
    finally:
        _WATCHING.remove(watched)
        for events in watched:
            events.unregister("before-parse.dynamodb", _check_answer)


#: The event emitters of the clients the running command has registered :func:`_check_answer` on.
_WATCHING: List[List[Any]] = []


def _watched(table: Type[_T]) -> Type[_T]:
    """``table`` (a model or counter class), its client's answers checked while the command runs."""
    if _WATCHING:
        events = table._get_connection().connection.client.meta.events
        if all(seen is not events for seen in _WATCHING[-1]):
            events.register("before-parse.dynamodb", _check_answer)
            _WATCHING[-1].append(events)
    return table


def _check_answer(response_dict: Dict[str, Any], **_: Any) -> None:
    """Raise :class:`NotDynamoDBError` for an answer that is not DynamoDB's JSON."""
    headers = response_dict.get("headers") or {}
    content_type = str(headers.get("content-type", headers.get("Content-Type", "")))
    status = int(response_dict.get("status_code") or 0)
    body = response_dict.get("body") or b""
    # some servers label DynamoDB's JSON text/html (older moto servers do): the body decides then
    looks_json = (body if isinstance(body, bytes) else str(body).encode()).lstrip()[:1] in (b"{", b"[")
    # 500, 502, 503 and 504 are retried by botocore (a proxy in front of DynamoDB may answer them in HTML);
    # if every retry gets one, _html_answer() recognises the error
    if "json" not in content_type.lower() and not looks_json and status not in _RETRIED:
        raise NotDynamoDBError(status, content_type)


_RETRIED = (500, 502, 503, 504)


def _html_answer(exc: BaseException) -> Optional[NotDynamoDBError]:
    """The error to report when ``exc`` carries an HTML page as DynamoDB's error message, else None."""
    for response in error_responses(exc):
        message = str(response.get("Error", {}).get("Message", "")).lstrip().lower()
        if message.startswith("<"):
            meta = response.get("ResponseMetadata", {})
            headers = meta.get("HTTPHeaders") or {}
            return NotDynamoDBError(int(meta.get("HTTPStatusCode") or 0), str(headers.get("content-type", "")))
    return None


def _fix_for(exc: BaseException) -> str:
    """What to do about a failed request, from the error behind it: ``"; check ..."``, or ``""``."""
    seen: List[BaseException] = []
    cause: Optional[BaseException] = exc
    while cause is not None and cause not in seen:
        seen.append(cause)
        cause = getattr(cause, "cause", None) or cause.__cause__ or cause.__context__
    names = {c.__name__ for e in seen for c in type(e).__mro__}
    code = error_code(exc)
    if "NoRegionError" in names:
        return ("; name the AWS region with --region (or set AWS_DEFAULT_REGION), or the endpoint with --host "
                "(DynamoDB Local's URL, such as http://127.0.0.1:8000)")
    if "NoCredentialsError" in names:
        return ("; give AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE); "
                "DynamoDB Local takes any")
    if str(exc).startswith("Invalid endpoint:"):  # botocore's ValueError for a --host that is no URL
        return "; give --host (or the model's Meta.host) as a URL, such as http://127.0.0.1:8000"
    if "ConnectionError" in names or "ConnectTimeoutError" in names:
        return "; check the endpoint (--host, or the model's Meta.host) and that the server is running"
    if code in ("AccessDeniedException", "UnrecognizedClientException"):
        return ("; use credentials that are allowed the request (the README's IAM section lists what the "
                "command line needs)")
    if code == "ResourceNotFoundException":
        return "; check --host, --region and --table, or create the table"
    return ""


def _where(model: Type[Model]) -> str:
    """Where ``model``'s table is reached: `` at http://...`` or `` in AWS region ...``."""
    host = getattr(model.Meta, "host", None)
    region = getattr(model.Meta, "region", None) or os.environ.get("AWS_DEFAULT_REGION")
    return f" at {host}" if host else f" in AWS region {region}" if region else ""


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {number}")
    return number


DESCRIPTION = ("Look at and fix the counters of pynamodb-autoinc without writing code. Name a model as "
               "package.module:Model with --model; its Meta settings pick the endpoint, the counter table and "
               "the counter key, unless --host or --region say otherwise. The options --host, --region and "
               "--table may be given before or after the command.")
"""The help's description, in plain text (the module docstring is reStructuredText)."""

EPILOG = ("exit codes: 0 done, 1 an error (its message on stderr), 2 bad usage, 3 a problem found in the data "
          "(check found duplicates, or holes in a gapless sequence; list found a counter that holds no integer; "
          "describe found a counter recording other options than its model)")

#: DynamoDB's limit on TotalSegments of a parallel scan.
MAX_SEGMENTS = 1_000_000

#: At most this many threads scan at once, however many segments there are.
MAX_SCAN_THREADS = 16


def _segments(text: str) -> int:
    number = _positive(text)
    if number > MAX_SEGMENTS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_SEGMENTS:,} (DynamoDB's limit on the segments of a "
                                         f"parallel scan), not {number:,}")
    return number


def _global_options(parser: argparse.ArgumentParser, default: Any) -> None:
    """--host, --region and --table: on the main parser (``default`` None) and on every command's
    (``default`` SUPPRESS, so that a value given before the command is kept)."""
    parser.add_argument("--host", default=default,
                        help="DynamoDB endpoint URL (default: the model's Meta.host, or AWS)")
    parser.add_argument("--region", default=default,
                        help="AWS region (default: the model's Meta.region, or AWS_DEFAULT_REGION)")
    parser.add_argument("--table", default=default, help="counter table name (default: NextId, or the model's)")
    parser.add_argument("-v", "--verbose", action="count", default=0 if default is None else default,
                        help="show the library's log on stderr: -v what it changes, -vv every step (DEBUG)")


def _model_options(parser: argparse.ArgumentParser, command: str) -> None:
    """``--model`` for a command that once took the model positionally (still accepted, deprecated)."""
    parser.add_argument("--model", help="package.module:Model")
    parser.add_argument("old_model", nargs="?", metavar="MODEL",
                        help=f"deprecated: the model named positionally; use `{command} --model MODEL` (the "
                             "positional form is removed in the next release)")


def _dry_run_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would change (counter key, old and new value and options); write nothing")


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="pynamodb-autoinc", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"pynamodb-autoinc {__version__}")
    _global_options(parser, None)
    common = argparse.ArgumentParser(add_help=False)
    _global_options(common, argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_parser = functools.partial(commands.add_parser, parents=[common])

    create = add_parser("create-table", help="create the counter table and wait until it is active")
    create.add_argument("--billing-mode", choices=("PAY_PER_REQUEST", "PROVISIONED"), default="PAY_PER_REQUEST")
    create.add_argument("--read-capacity", type=_positive, default=1, help="with PROVISIONED (default 1)")
    create.add_argument("--write-capacity", type=_positive, default=1, help="with PROVISIONED (default 1)")
    create.set_defaults(run=_create_table)

    listing = add_parser(
        "list", help="list the counters and their values",
        description="List the counters and their values. A counter that holds no integer (a fraction, or no "
                    "number at all) is listed too, marked as such, with how to fix it on stderr; the command then "
                    "exits 3, after listing every counter.")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.set_defaults(run=_list)

    get = add_parser("get", help="print one counter's value (the last value handed out)")
    get.add_argument("key", nargs="?", help="counter key (default: the model's)")
    get.add_argument("--model", help="package.module:Model whose counter to read")
    get.set_defaults(run=_get)

    set_ = add_parser("set", help="set a counter; the next value handed out is VALUE + step")
    set_.add_argument("value", type=int)
    set_.add_argument("--key", help="counter key (default: the model's)")
    set_.add_argument("--model", help="package.module:Model: refuse a value behind its stored IDs (below the "
                                      "largest; above the smallest, for a negative step)")
    set_.add_argument("--force", action="store_true", help="set it even behind the stored IDs")
    set_.add_argument("--is-called", action=argparse.BooleanOptionalAction, default=True,
                      help="as PostgreSQL's setval: the next value is VALUE + step (default), or with "
                           "--no-is-called VALUE itself")
    _dry_run_option(set_)
    set_.set_defaults(run=_set)

    describe = add_parser(
        "describe", help="show each counter's sequence: options, last value, values left, models",
        description="Show each counter's sequence, as PostgreSQL's pg_sequences does: its options (as recorded on "
                    "the counter, else as the model sets them), its last value, how many values are left before "
                    "its end bound, and the models using it. With --model, only those models' counters; a counter "
                    "recording other options than its model is reported on stderr and the command exits 3.")
    describe.add_argument("--model", action="append", default=[],
                          help="package.module:Model (repeatable): describe its counters")
    describe.add_argument("--json", action="store_true", help="print JSON instead of a table")
    describe.set_defaults(run=_describe)

    restart = add_parser(
        "restart", help="restart a model's sequence: the next value is its start, or --with N",
        description="ALTER SEQUENCE ... RESTART [WITH N]: the next value handed out is N (default: the model's "
                    "start), and the counter records the model's options. Refused when N lies outside the bounds, "
                    "or, unless --force, when items with IDs at or past N are stored (their IDs would be handed "
                    "out again, and those saves refused).")
    restart.add_argument("--model", required=True, help="package.module:Model")
    restart.add_argument("--key", help="counter key (default: the model's)")
    restart.add_argument("--with", dest="value", type=int, help="the next value (default: the model's start)")
    restart.add_argument("--force", action="store_true", help="restart even at or behind the stored IDs")
    _dry_run_option(restart)
    restart.set_defaults(run=_restart)

    alter = add_parser(
        "alter", help="record a model's changed options on its counter (ALTER SEQUENCE)",
        description="ALTER SEQUENCE: record the model's current Meta options (start, step, min, max, cycle) on its "
                    "counter, keeping the counter's value. Run it after changing those options; until then, saves "
                    "of the changed model are refused. Refused when the counter lies outside the new bounds "
                    "(restart it instead).")
    alter.add_argument("--model", required=True, help="package.module:Model")
    alter.add_argument("--key", help="counter key (default: the model's)")
    _dry_run_option(alter)
    alter.set_defaults(run=_alter)

    seed = add_parser(
        "seed", help="raise a model's counters to the largest IDs stored in its table "
                     "(lower them to the smallest, for a negative step); never moves one back",
        description="Raise a model's counters to the largest IDs stored in its table (lower them to the smallest, "
                    "for a negative step); a counter is never moved back. With Meta.autoinc_regions, each region's "
                    "counter is put past every stored ID and every region's counter (and the single-region counter "
                    "a table had before), on the region's own subsequence: a counter recording another layout "
                    "(a region was appended) or none is restarted there with the new options. A reordered list "
                    "is refused before anything moves.")
    _model_options(seed, "seed")
    seed.add_argument("--segments", type=_segments, default=4,
                      help=f"parallel scan segments, 1 to {MAX_SEGMENTS:,} (default 4)")
    _dry_run_option(seed)
    seed.set_defaults(run=_seed)

    check = add_parser(
        "check", help="look for duplicates and holes in a model's auto-increment IDs",
        description="Look for duplicates and holes in a model's auto-increment IDs, per counter. Holes are the "
                    "values of the sequence (start, start + step, ...) up to the furthest stored one that no item "
                    "holds; stored values that are not on the sequence are counted apart (OFF-SEQUENCE). Exits 3 "
                    "on duplicates, or on holes in a gapless model.")
    _model_options(check, "check")
    check.add_argument("--segments", type=_segments, default=4,
                       help=f"parallel scan segments, 1 to {MAX_SEGMENTS:,} (default 4)")
    check.add_argument("--json", action="store_true", help="print JSON instead of text")
    check.set_defaults(run=_check)
    iam = add_parser("policy", help="print the least-privilege IAM policy a model's saves need")
    _model_options(iam, "policy")
    iam.add_argument("--account", default="*", help="AWS account ID for the table ARNs (default *)")
    iam.set_defaults(run=_policy)
    return parser


# -- resolving models and counters ---------------------------------------------

def load_model(spec: str, host: Optional[str] = None, region: Optional[str] = None) -> Type[Model]:
    """Import ``package.module:Model``; ``host``/``region`` override its Meta."""
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise CommandError(f"name a model as package.module:Model, not {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # import from the current directory, as `python -m` would
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandError(f"cannot import {spec!r}: {exc}; run the command from the directory that holds "
                           "the package (models are imported from the current directory), or add that "
                           "directory to PYTHONPATH") from exc
    except Exception as exc:
        raise CommandError(f"cannot import {spec!r}: importing {module_name} raised "
                           f"{type(exc).__name__}: {exc}; fix the module so that it imports") from exc
    model = getattr(module, name, None)
    if model is None:
        raise CommandError(f"cannot import {spec!r}: module {module_name!r} has no attribute {name!r}; "
                           "name a model class defined in it")
    if not (isinstance(model, type) and issubclass(model, Model)):
        raise CommandError(f"{spec!r} is not a PynamoDB model; name a Model subclass")
    for setting, value in (("host", host), ("region", region)):
        if value is not None:
            setattr(model.Meta, setting, value)
            model._connection = None
    return model


def _counter(args: argparse.Namespace, model: Optional[Type[Model]] = None) -> Type[NextId]:
    """The counter model the command reaches: the model's, or the table named by --table (NextId) at --host and
    --region; its answers checked (:func:`_watched`)."""
    counter = _watched(_counter_model(args, model))
    log.debug("counter table %r%s", counter.Meta.table_name, _where(counter))
    return counter


def _counter_model(args: argparse.Namespace, model: Optional[Type[Model]] = None) -> Type[NextId]:
    if model is not None and args.table is None:
        return options_for(model).counter
    meta = {"table_name": args.table or NextId.Meta.table_name}
    for setting in ("host", "region"):
        if getattr(args, setting):
            meta[setting] = getattr(args, setting)
    # its own connection: NextId may have cached one for another endpoint, which a subclass would inherit
    counter = type("NextId", (NextId,), {"Meta": type("Meta", (), meta), "__module__": __name__,
                                         "_connection": None})
    return bind_counter(counter, model) if model is not None else counter


@contextlib.contextmanager
def _counter_errors(counter: Type[NextId], key: str, model: Optional[Type[Model]] = None) -> Iterator[None]:
    """Report a missing counter table, or a counter holding no integer, with the command that fixes it."""
    try:
        yield
    except CounterTableMissingError as exc:
        table = counter.Meta.table_name
        if model is not None and table == model.Meta.table_name:
            raise CommandError(f"{model.__name__}'s table {table!r}{_where(counter)}, which keeps its counters, "
                               "does not exist; create it, or point --host and --region at the endpoint that "
                               "holds it") from exc
        command = ["pynamodb-autoinc"]
        for option, value in (("--host", getattr(counter.Meta, "host", None)),
                              ("--region", getattr(counter.Meta, "region", None)),
                              ("--table", table if table != NextId.Meta.table_name else None)):
            command += [option, value] if value else []
        raise CommandError(f"counter table {table!r}{_where(counter)} does not exist; create it with "
                           f"`{' '.join([*command, 'create-table'])}`, or name the table in use with --table "
                           "(and --host, --region)") from exc
    except CounterValueError as exc:
        raise CommandError(str(exc)) from exc  # it names the command that fixes it


def _model_arg(args: argparse.Namespace) -> Optional[Type[Model]]:
    return _autoinc_model(args.model, args.host, args.region) if getattr(args, "model", None) else None


def _autoinc_model(spec: str, host: Optional[str], region: Optional[str]) -> Type[Model]:
    """:func:`load_model`, refusing a model that keeps no counter (it does not use AutoIncrementMixin)."""
    model = load_model(spec, host, region)
    if not issubclass(model, AutoIncrementMixin):
        raise CommandError(f"{model.__name__} ({spec}) does not use AutoIncrementMixin, so it keeps no counter; name "
                           "a model that does (class User(AutoIncrementMixin, Model))")
    return model


# -- commands ------------------------------------------------------------------

def _create_table(args: argparse.Namespace) -> int:
    counter = _counter(args)
    if counter.exists():
        print(f"table {counter.Meta.table_name!r} exists")
        return 0
    capacity = {}
    if args.billing_mode == "PROVISIONED":
        capacity = {"read_capacity_units": args.read_capacity, "write_capacity_units": args.write_capacity}
    counter.create_table(billing_mode=args.billing_mode, wait=True, **capacity)
    print(f"created table {counter.Meta.table_name!r} ({args.billing_mode})")
    return 0


def _list(args: argparse.Namespace) -> int:
    counter = _counter(args)
    key_name, value_name = counter.next_key.attr_name, counter.next_id.attr_name
    rows: List[Dict[str, Any]] = []
    for raw in _scan_raw(counter):
        key = raw.get(key_name, {}).get("S")
        if key is None:
            raise CommandError(f"table {counter.Meta.table_name!r} holds an item without a string {key_name} "
                               f"({sorted(raw)}), so it is not a counter table; name the counter table with --table")
        rows.append({"key": key, **_counter_value(raw.get(value_name))})
    rows.sort(key=lambda row: row["key"])
    if args.json:
        print(json.dumps(rows))
    else:
        _table(sys.stdout, ("KEY", "VALUE"), [
            (row["key"], _shown(row["stored"]) + f" ({row['problem']})" if "problem" in row
             else "" if row["value"] is None else str(row["value"]))
            for row in rows
        ])
    bad = [row for row in rows if "problem" in row]
    for row in bad:
        print(f"error: counter {row['key']!r} holds {_shown(row['stored'])}, {row['problem']}: saves that use it "
              f"fail until it is set. Set it to the last ID handed out: pynamodb-autoinc set N --key {row['key']} "
              "(with --model package.module:Model, set refuses a value behind the stored IDs)", file=sys.stderr)
    return EXIT_PROBLEMS if bad else 0


def _counter_value(stored: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """A counter's value for ``list``: ``{"value": int or None}``, or the stored attribute and its problem."""
    if stored is None:
        return {"value": None}
    if "N" in stored:
        value = integer(stored["N"])
        if value is not None:
            return {"value": value}
        return {"value": None, "stored": stored, "problem": "not an integer"}
    return {"value": None, "stored": stored, "problem": "not a number"}


def _shown(stored: Dict[str, Any]) -> str:
    """A stored DynamoDB attribute as a person reads it: ``1.5``, or ``{"S": "x"}`` when it is no number."""
    return str(stored["N"]) if "N" in stored else json.dumps(stored)


def _model_and_key(args: argparse.Namespace) -> Tuple[Optional[Type[Model]], str]:
    """The model named by --model (if any) and the counter key: the one given, or the model's."""
    name_it = "give KEY" if args.command == "get" else "use --key"
    model = _model_arg(args)
    if model is None:
        if not args.key:
            raise CommandError(f"name the counter: {name_it}, or name a model with --model package.module:Model")
        return None, args.key
    opts = options_for(model)
    if opts.strategy == "query":
        raise CommandError(f"{model.__name__} uses the query strategy (Meta.autoinc_strategy = 'query'): it "
                           f"numbers each partition from its stored items and keeps no counter to {args.command}")
    if args.key:
        if not opts.owns(args.key):
            raise CommandError(f"counter {args.key!r} is not one of {model.__name__}'s, whose counter keys are "
                               f"{_key_form(opts)!r}; name one of those with --key, or leave --model out to "
                               f"{args.command} a counter of your own")
        return model, args.key
    if opts.regions:
        raise CommandError(f"{model.__name__} keeps one counter per region (Meta.autoinc_regions), so the model "
                           f"alone does not name one; {name_it}, such as '{opts.key}@{opts.regions[0]}'")
    if opts.scope or opts.period:
        per = [*opts.scope, *(["period"] if opts.period else [])]
        example = "#".join([opts.key, *(f"<{name}>" for name in opts.scope),
                            *([str(opts.current_period())] if opts.period else [])])
        raise CommandError(f"{model.__name__} keeps one counter per {' and '.join(per)}, so the model alone does "
                           f"not name one; {name_it}, such as {example!r} (`list` shows the counters)")
    return model, opts.key


def _key_form(opts: Options) -> str:
    """The form of a model's counter keys: ``orders``, ``issues#<project>``, ``receipts#<year>@<region>``."""
    key = "#".join([opts.key, *(f"<{name}>" for name in opts.scope), *([f"<{opts.period}>"] if opts.period else [])])
    return f"{key}@<region>" if opts.regions else key


def _sequence_of(model: Type[Model], key: str) -> SequenceOptions:
    """The sequence of ``model``'s counter ``key`` (its region's, with Meta.autoinc_regions)."""
    try:
        return regions.sequence_of(options_for(model), key)
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from exc


def _numbering(opts: Options) -> str:
    """Why the stored IDs of a model with a period or a format do not show their counter."""
    if opts.period:
        return f"{opts.model.__name__} numbers its IDs per period (Meta.autoinc_period = {opts.period!r})"
    return f"{opts.model.__name__} formats its IDs (Meta.autoinc_format = {opts.fmt!r})"


def _get(args: argparse.Namespace) -> int:
    model, key = _model_and_key(args)
    counter = _counter(args, model)
    with _counter_errors(counter, key, model):
        value = counter.currval(key)
    if value is None:
        raise CommandError(f"counter {key!r} has no value yet; check the key (`list` shows the counters), or "
                           f"set it with `pynamodb-autoinc set N --key {key}`")
    print(value)
    return 0


def _set(args: argparse.Namespace) -> int:
    model, key = _model_and_key(args)
    sequence = _sequence_of(model, key) if model is not None else None
    counter = _counter(args, model)
    if model is not None and sequence is not None:
        sequence.check(key, args.value)
        if options_for(model).regions:
            sequence.check_member(key, args.value, last=args.is_called)
    elif "@" in key:
        # a region counter named without its model: the options it records give the region's subsequence
        with _counter_errors(counter, key):
            recorded = counter.stored_options(key)
        if recorded is not None:
            check_region_value(key, recorded, args.value, last=args.is_called)
    if model is not None and not args.force:
        opts = options_for(model)
        assert sequence is not None
        furthest = _stored_ahead(model, key, args.value if args.is_called else args.value - sequence.step,
                                 f"set cannot compare {args.value}")
        if furthest is not None:
            below, more = ("below", "higher") if opts.step > 0 else ("above", "lower")
            counts = "" if opts.step > 0 else f" counts down (Meta.autoinc_step = {opts.step}) and"
            raise CommandError(
                f"{model.__name__}{counts} already stores {opts.attribute}={furthest} under counter {key!r}; "
                f"setting the counter to {args.value}, {below} that, would make the next saves take IDs that are "
                f"already stored (those saves are refused, never overwritten). Set it to {furthest} or {more}, "
                "as `seed` does. Use --force to set it anyway"
            )
    if args.dry_run:
        return _dry_run(counter, key, model, "set", sequence,
                        lambda item, seq: setval_value(key, args.value, args.is_called, seq))
    with _counter_errors(counter, key, model):
        counter.setval(key, args.value, is_called=args.is_called, sequence=sequence)
    print(f"{key} = {args.value}" if args.is_called else f"{key}: the next value is {args.value}")
    return 0


def _stored_ahead(model: Type[Model], key: str, counter_value: int, cannot: str) -> Optional[int]:
    """The furthest stored ID under counter ``key`` if a counter holding ``counter_value`` is behind it (its
    next values are stored already), else None. ``cannot`` says what a model with a period or a format,
    whose IDs do not show their counter, cannot do."""
    opts = options_for(model)
    if opts.period or opts.fmt:
        raise CommandError(f"{_numbering(opts)}, so {cannot} with the stored IDs; look up the last ID of that "
                           "counter yourself and use --force")
    # the stored IDs of every region, for a region's counter: a region's values must pass them all
    furthest = _furthest_ids(model, segments=4).get(key.rpartition("@")[0] if opts.regions else key)
    return furthest if furthest is not None and _behind(counter_value, furthest, opts.step) else None


def _restart(args: argparse.Namespace) -> int:
    model, key = _model_and_key(args)
    assert model is not None
    opts = options_for(model)
    sequence = _sequence_of(model, key)
    value = sequence.start if args.value is None else args.value
    sequence.check(key, value)
    if opts.regions:
        sequence.check_member(key, value, last=False)
    if not args.force:
        furthest = _stored_ahead(model, key, value - sequence.step, f"restart cannot compare {value}")
        if furthest is not None:
            raise CommandError(
                f"{model.__name__} already stores {opts.attribute}={furthest} under counter {key!r}; restarting at "
                f"{value} would hand out IDs that are stored (those saves are refused, never overwritten). Delete "
                "those items first, restart past them with --with, or use --force")
    counter = _counter(args, model)
    if args.dry_run:
        return _dry_run(counter, key, model, "restarted", sequence, lambda item, seq: value - sequence.step,
                        replace=True)
    with _counter_errors(counter, key, model):
        counter.restart(key, sequence, value)
    print(f"{key}: restarted; the next value is {value}")
    return 0


def _alter(args: argparse.Namespace) -> int:
    model, key = _model_and_key(args)
    assert model is not None
    sequence = _sequence_of(model, key)
    counter = _counter(args, model)
    if args.dry_run:
        return _dry_run(counter, key, model, "altered", sequence,
                        lambda item, seq: counter.kept_value(key, item, sequence), replace=True)
    with _counter_errors(counter, key, model):
        before = counter.alter(key, sequence)
    if before == sequence:
        print(f"{key}: already runs under {sequence.encode()}")
    else:
        print(f"{key}: now runs under {sequence.encode()}"
              + (f" (was: {before.encode()})" if before is not None else ""))
    return 0


def _dry_run(counter: Type[NextId], key: str, model: Optional[Type[Model]], verb: str,
             sequence: Optional[SequenceOptions],
             new_value: Callable[[Dict[str, Any], Optional[SequenceOptions]], Optional[int]],
             replace: bool = False) -> int:
    """--dry-run: print counter ``key``'s value and options now and as the command would leave them; write nothing.

    ``new_value(item, options)``: the value the command would write, given the counter item as read (whatever it
    holds: a counter holding 1.5 or a string is shown as it is, and set and restart replace it) and the options
    it would run under. Without ``replace`` (set), ``sequence`` must agree with the options the counter records,
    as :meth:`NextId.setval` requires; options that are no sequence options are replaced by ``sequence``, or
    left as they are without one, as the command does.
    """
    with _counter_errors(counter, key, model):
        item = counter._item(key)
        recorded = counter._recorded(item)
        if not replace and sequence is not None and recorded is not None and recorded != sequence:
            raise counter._mismatch(key, sequence, recorded.encode())
        options = sequence or recorded
        value = new_value(item, options)
    stored_value = item.get(counter.next_id.attr_name)
    stored_options = item.get(counter.options.attr_name)

    def shown(stored: Optional[Dict[str, Any]]) -> str:
        if stored is None:
            return "none"
        number = _counter_value(stored).get("value")
        return str(number) if number is not None else _shown(stored)

    def described(stored: Optional[Dict[str, Any]]) -> str:
        return "none recorded" if stored is None else stored["S"] if "S" in stored else json.dumps(stored)

    after = stored_options if options is None else {"S": options.encode()}
    following = "" if options is None else \
        f"; the next value would be {options.start if value is None else value + options.step}"
    print(f"dry run: counter {key!r} would be {verb}: value {shown(stored_value)} -> "
          f"{shown(None if value is None else {'N': str(value)})}, options {described(stored_options)} -> "
          f"{described(after)}{following}. Nothing was written")
    return 0


def _describe(args: argparse.Namespace) -> int:
    models = [_autoinc_model(spec, args.host, args.region) for spec in args.model]
    counters: List[Tuple[Type[NextId], Optional[Options], str]] = []
    for spec, model in zip(args.model, models):
        opts = options_for(model)
        if opts.strategy == "query":
            raise CommandError(f"{model.__name__} uses the query strategy: it keeps no counter to describe")
        counters.append((_counter(args, model), opts, spec))
    if not models:
        counters.append((_counter(args), None, ""))
    rows: Dict[Tuple[str, str], Dict[str, Any]] = {}
    problems: List[str] = []
    for counter, owner, spec in counters:
        prefix = counter._autoinc_prefix
        for raw in _scan_raw(counter):
            hash_key = raw.get(counter.next_key.attr_name, {}).get("S", "")
            key = hash_key[len(prefix):]
            # exactly the model's keys: not another model's whose key starts with this one's (orders#eu beside
            # orders), nor the single-region counter a table had before it moved to region-homed sequences
            if not hash_key.startswith(prefix) or (owner is not None and not owner.owns(key, any_region=True)):
                continue
            row = rows.get((counter.Meta.table_name, key))
            if row is None:
                try:
                    row = rows[counter.Meta.table_name, key] = _describe_row(counter, key, raw)
                except CommandError as exc:  # one broken counter: the others are still described
                    problems.append(str(exc))
                    continue
            if owner is None:
                continue
            row["models"].append(owner.model.__name__)
            try:
                expected = regions.sequence_of(owner, key)
            except ConfigurationError as exc:
                problems.append(f"{exc}; it is left over from another list of regions")
                continue
            if row["recorded"] is not None and row["recorded"] != expected:
                problems.append(f"counter {key!r} records other sequence options than {owner.model.__name__}: "
                                f"{', '.join(expected.differences(row['recorded']))}, so one of them has its "
                                "saves refused. If the model's Meta changed on purpose, record its options with "
                                f"`pynamodb-autoinc alter --model {spec} --key {key}`; otherwise make them agree"
                                + (f" (after appending a region, run `pynamodb-autoinc seed --model {spec}`)"
                                   if owner.regions else ""))
            _fill(row, row["recorded"] or expected)
    report = [{k: v for k, v in row.items() if k != "recorded"} for _, row in sorted(rows.items())]
    if args.json:
        print(json.dumps(report))
    else:
        _table(sys.stdout, ("KEY", "TABLE", "START", "STEP", "MIN", "MAX", "CYCLE", "LAST", "LEFT", "MODELS"), [
            tuple("" if r[c] is None else "yes" if r[c] is True else "no" if r[c] is False else str(r[c])
                  for c in ("key", "table", "start", "step", "min", "max", "cycle", "last_value", "left"))
            + (", ".join(r["models"]),)
            for r in report
        ])
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return EXIT_PROBLEMS if problems else 0


def _describe_row(counter: Type[NextId], key: str, raw: Dict[str, Any]) -> Dict[str, Any]:
    """One counter of ``describe``: its recorded options (if any) and last value."""
    with _counter_errors(counter, key):
        last = counter._value_in(key, raw)
        recorded = counter._options_in(key, raw)
    row: Dict[str, Any] = {"key": key, "table": counter.Meta.table_name, "start": None, "step": None, "min": None,
                           "max": None, "cycle": None, "last_value": last, "left": None, "models": [],
                           "recorded": recorded}
    if recorded is not None:
        _fill(row, recorded)
    return row


def _fill(row: Dict[str, Any], sequence: SequenceOptions) -> None:
    row.update(start=sequence.start, step=sequence.step, min=sequence.minimum, max=sequence.maximum,
               cycle=sequence.cycle, left=sequence.remaining(row["last_value"]))


def _seed(args: argparse.Namespace) -> int:
    model = _autoinc_model(args.model, args.host, args.region)
    opts = options_for(model)
    if opts.strategy == "query":
        raise CommandError(f"{model.__name__} uses the query strategy (Meta.autoinc_strategy = 'query'): it "
                           "numbers each partition from its stored items and keeps no counter to seed")
    if opts.period or opts.fmt:
        raise CommandError(f"{_numbering(opts)}, so seed cannot read the counter each ID belongs to; set each "
                           "counter with `pynamodb-autoinc set N --key KEY` (`list` shows the keys)")
    counter = _counter(args, model)
    furthest = _furthest_ids(model, args.segments)
    if opts.regions:
        try:
            report = regions.seed(opts, counter, furthest, dry_run=args.dry_run)
        except GlobalTableError as exc:
            raise CommandError(str(exc)) from exc
        print("\n".join(report) if report else f"{model.__name__} stores no IDs and has no counters: nothing to seed")
        if args.dry_run and report:
            print("dry run: nothing was written")
        return 0
    moved, already = ("raised to", "already at or above") if opts.step > 0 else ("lowered to", "already at or below")
    outside = {key: value for key, value in furthest.items() if not opts.sequence.contains(value)}
    if outside:  # refused before any counter moves: a counter put there would refuse every save
        sequence = opts.sequence
        raise CommandError(
            f"{model.__name__} stores {opts.attribute} values outside its sequence's bounds "
            f"({sequence.minimum}..{sequence.maximum}): "
            + ", ".join(f"{value} under counter {key!r}" for key, value in sorted(outside.items()))
            + "; seed would move the counter outside them, where saves are refused. Widen the bounds "
            f"(Meta.autoinc_min / autoinc_max, then `pynamodb-autoinc alter --model {args.model}`), or renumber "
            "those items; nothing was moved")
    for key, value in sorted(furthest.items()):
        if opts.sequence.cycle:
            with _counter_errors(counter, key, model):
                last = counter.currval(key)
            if last is not None:
                # after a wrap the furthest stored ID is behind the counter, not ahead: only a new counter is seeded
                print(f"{'dry run: ' if args.dry_run else ''}{key}: left at {last}: the sequence cycles "
                      f"(Meta.autoinc_cycle), so the furthest stored ID, {value}, need not be the last one handed "
                      f"out; move it with `pynamodb-autoinc set N --model {args.model}` if it is behind")
                continue
        if args.dry_run:
            with _counter_errors(counter, key, model):
                raised, stored = _raised_from(counter, key, value, opts.step)
            print(f"dry run: {key}: would be {moved} {value} (from {stored})" if raised else
                  f"dry run: {key}: would stay at {stored}, {already} {value}")
            continue
        with _counter_errors(counter, key, model):
            done = counter.raise_to(key, value, step=opts.step)
        print(f"{key}: {moved if done else already} {value}")
    if not furthest:
        print(f"{model.__name__} stores no IDs: nothing to seed")
    elif args.dry_run:
        print("dry run: nothing was written")
    return 0


def _raised_from(counter: Type[NextId], key: str, value: int, step: int) -> Tuple[bool, str]:
    """Whether :meth:`NextId.raise_to` would move counter ``key`` to ``value`` (it is behind ``value`` in the
    direction of ``step``, or holds nothing), and what it holds, shown. Raises what raise_to raises for a
    counter that stays: one holding no integer that is not behind."""
    item = counter._item(key)
    stored = item.get(counter.next_id.attr_name)
    if stored is None:
        return True, "none"
    held = number(stored.get("N"))
    if held is not None and (held < value if step > 0 else held > value):
        return True, _shown(stored)  # a fraction behind value is moved too: the update's condition compares numbers
    return False, str(counter._value_in(key, item))  # raises, as raise_to does, when it holds no integer


def _check(args: argparse.Namespace) -> int:
    model = _autoinc_model(args.model, args.host, args.region)
    opts = options_for(model)
    if opts.period or opts.fmt:
        raise CommandError(f"{_numbering(opts)}, so check cannot tell which sequence a stored ID belongs to "
                           "(it reads plain integer IDs, one sequence per counter); check such IDs with a query "
                           "of your own")
    report: List[Dict[str, Any]] = []
    bad = False
    counter = _watched(opts.counter) if opts.sequence.cycle else None
    for key, values, sequence in _audited_groups(opts, _ids_by_counter(model, args.segments)):
        row = {"key": key, **_audit(values, sequence, counter.currval(key) if counter else None)}
        bad = bad or bool(row["duplicates"]) or (opts.gapless and bool(row["holes"]))
        report.append(row)
    if args.json:
        print(json.dumps(report))
    else:
        _table(sys.stdout, ("COUNTER", "ITEMS", "MIN", "MAX", "DUPLICATES", "HOLES", "OFF-SEQUENCE"), [
            (r["key"], str(r["items"]), str(r["min"]), str(r["max"]),
             ", ".join(map(str, r["duplicates"][:_FIRST])) or "0",
             str(r["holes"]) + (f" (first: {', '.join(map(_span, r['hole_ranges']))})" if r["holes"] else ""),
             str(r["off_sequence"]) + (f" ({', '.join(map(str, r['first_off_sequence']))})"
                                       if r["off_sequence"] else ""))
            for r in report
        ])
        if not report:
            print(f"{model.__name__} stores no IDs")
    return EXIT_PROBLEMS if bad else 0


_FIRST = 10
"""How many duplicates, hole ranges and off-sequence values a report names."""


def _audited_groups(opts: Options, groups: Dict[str, List[int]]) -> List[Tuple[str, List[int], SequenceOptions]]:
    """(counter key, stored IDs, the sequence they follow) for ``check``, sorted by key.

    With Meta.autoinc_regions each region numbers its own subsequence, so a
    key's IDs are audited per region, as ``key@region`` against the region's
    subsequence; IDs on no region's subsequence stay under ``key``, all of them
    off the sequence.
    """
    if not opts.regions:
        return [(key, values, opts.sequence) for key, values in sorted(groups.items())]
    layout = regions.regions_of(opts)
    found: List[Tuple[str, List[int], SequenceOptions]] = []
    for key, values in groups.items():
        by_region: Dict[int, List[int]] = {}
        for value in values:
            position = opts.sequence.position(value)
            by_region.setdefault(-1 if position is None else position % len(layout), []).append(value)
        for index, mine in by_region.items():
            if index < 0:
                found.append((key, mine, opts.sequence))
            else:
                found.append((f"{key}@{layout[index][0]}", mine, layout[index][1]))
    return sorted(found, key=lambda group: group[0])


def _audit(values: List[int], sequence: SequenceOptions, last: Optional[int] = None) -> Dict[str, Any]:
    """Duplicates, holes and off-sequence values among the stored IDs of one counter.

    The sequence is ``start, start + step, ...``; a stored value is at
    position ``(value - start) / step`` of it when that is a whole number
    ``>= 0``, and off the sequence otherwise. Holes are the positions before
    the furthest stored one that no item holds; they are counted from the
    sorted positions, neighbour to neighbour, so a huge ID costs no memory.
    ``hole_ranges`` lists the first runs of holes as ``[first, last]`` in
    sequence order (``last < first`` for a negative step, or across a wrap).

    A cycling sequence whose counter holds ``last`` is read as a ring that
    ends at ``last``: the values after it, up to the first one stored, are
    the ones a next pass will take (after a wrap, the ones the items of the
    last pass left free), not holes; holes lie between the first and the
    furthest stored value of the ring, as they do without a cycle.
    """
    values = sorted(values)
    duplicates = sorted({a for a, b in zip(values, values[1:]) if a == b})
    ring = last is not None and sequence.cycle and sequence.on_sequence(last) and \
        (sequence.start - sequence.restart_value) % sequence.step == 0
    if ring:
        assert last is not None
        base = (last - sequence.restart_value) // sequence.step + 1  # the ring's place 0: the value after last

        def place(value: int) -> Optional[int]:
            if not sequence.on_sequence(value):
                return None
            return ((value - sequence.restart_value) // sequence.step - base) % sequence.size

        def value_at(position: int) -> int:
            return sequence.restart_value + (position + base) % sequence.size * sequence.step
    else:
        place, value_at = sequence.position, sequence.at
    positions: List[int] = []
    off: List[int] = []
    for value in values:
        position = place(value)
        if position is None:
            off.append(value)
        else:
            positions.append(position)
    positions = sorted(set(positions))
    holes, previous = 0, (positions[0] - 1 if ring and positions else -1)
    ranges: List[List[int]] = []
    for position in positions:
        if position > previous + 1:
            holes += position - previous - 1
            if len(ranges) < _FIRST:
                ranges.append([value_at(previous + 1), value_at(position - 1)])
        previous = position
    return {"items": len(values), "min": values[0], "max": values[-1], "duplicates": duplicates,
            "holes": holes, "hole_ranges": ranges,
            "off_sequence": len(off), "first_off_sequence": sorted(set(off))[:_FIRST]}


def _span(bounds: List[int]) -> str:
    first, last = bounds
    return str(first) if first == last else f"{first}..{last}"


def _policy(args: argparse.Namespace) -> int:
    from .iam import policy

    model = load_model(args.model, args.host, args.region)
    print(json.dumps(policy(model, region=args.region or "*", account=args.account), indent=2))
    return 0


# -- scanning ------------------------------------------------------------------

def _scan_failed(model: Type[Model], exc: PynamoDBException, counters: bool) -> CommandError:
    table = model.Meta.table_name
    html = _html_answer(exc)
    if html is not None:
        return html
    if error_code(exc) != "ResourceNotFoundException":
        return CommandError(f"could not scan table {table!r}{_where(model)}: {str(exc).rstrip('.')}{_fix_for(exc)}")
    if counters:
        return CommandError(f"counter table {table!r}{_where(model)} does not exist; name the table in use with "
                            "--table (and --host, --region), or create it with `pynamodb-autoinc create-table`")
    return CommandError(f"{model.__name__}'s table {table!r}{_where(model)} does not exist; point --host and "
                        "--region at the endpoint that holds it, or create the table")


def _scan_raw(counter: Type[NextId]) -> List[Dict[str, Any]]:
    try:
        return _transport.scan(counter._get_connection().connection, counter.Meta.table_name)
    except PynamoDBException as exc:
        raise _scan_failed(counter, exc, counters=True) from exc


def _behind(value: int, furthest: int, step: int) -> bool:
    """Whether a counter at ``value`` is behind the stored ID ``furthest``: its next values could be taken."""
    return value < furthest if step > 0 else value > furthest


def _furthest_ids(model: Type[Model], segments: int) -> Dict[str, int]:
    """The furthest stored ID per counter key: the largest, or the smallest for a negative step."""
    ids = _ids_by_counter(model, segments)
    opts = options_for(model)
    pick = max if opts.step > 0 else min
    return {key: pick(values) for key, values in ids.items() if values}


def _ids_by_counter(model: Type[Model], segments: int) -> Dict[str, List[int]]:
    """Every stored auto-increment value, grouped by counter key, from a parallel scan.

    Items whose value is no integer (or that lack a scope value) are left out, with a note on stderr.
    """
    opts = options_for(model)
    names = [opts.attribute, *opts.scope]
    if opts.strategy == "query":
        names.append(str(model._hash_keyname))
    attrs = model.get_attributes()
    # each stored name as one name (PynamoDB takes Paths too): a dot in a name is no path into a map
    wanted: List[Any] = [Path([stored]) for stored in sorted({attrs[name].attr_name for name in names})]
    progress = _Progress(sys.stderr)
    groups: Dict[str, List[int]] = {}
    skipped = 0
    lock = threading.Lock()

    _watched(model)

    def scan(segment: int) -> None:
        nonlocal skipped
        for item in model.scan(segment=segment, total_segments=segments, attributes_to_get=wanted,
                               consistent_read=True):
            value = getattr(item, opts.attribute)
            key = _key_of(opts, item)
            with lock:
                progress.tick()
                number = _as_int(value)
                if number is None or key is None:
                    skipped += 1
                    continue
                groups.setdefault(key, []).append(number)

    # a bounded pool, each thread scanning every workers-th segment: threads and futures stay few however
    # many segments there are (DynamoDB allows up to 1,000,000)
    workers = min(segments, MAX_SCAN_THREADS)

    def scan_stride(first: int) -> None:
        for segment in range(first, segments, workers):
            scan(segment)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            for future in [pool.submit(scan_stride, first) for first in range(workers)]:
                future.result()
        except PynamoDBException as exc:
            raise _scan_failed(model, exc, counters=False) from exc
    progress.done()
    if skipped:
        items, holds, lack = ("item", "holds", "lacks") if skipped == 1 else ("items", "hold", "lack")
        lacks = f" or {lack} a value of {', '.join(opts.scope)}" if opts.scope else ""
        print(f"note: {skipped} {items} of {model.__name__} {holds} no integer {opts.attribute}{lacks}; left out",
              file=sys.stderr)
    return groups


def _key_of(opts: Options, item: Model) -> Optional[str]:
    if opts.strategy == "query":
        return f"{opts.model.Meta.table_name}#{getattr(item, str(opts.model._hash_keyname))}"
    try:
        return opts.counter_key(item, None)
    except ValueError:
        return None  # a scope value is missing on this item


def _as_int(value: Any) -> Optional[int]:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number == value or str(number) == str(value) else None


class _Progress:
    """A one-line progress counter on a terminal; silent otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream, self.count = stream, 0
        self.live = stream.isatty()

    def tick(self) -> None:
        self.count += 1
        if self.live and self.count % 1000 == 0:
            self.stream.write(f"\rscanned {self.count:,} items")
            self.stream.flush()

    def done(self) -> None:
        if self.live:
            self.stream.write(f"\rscanned {self.count:,} items\n")


def _table(out: TextIO, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    for row in (header, *rows):
        out.write("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() + "\n")
