"""``pynamodb-autoinc [--host URL] [--region R] [--table T] COMMAND [--model package.module:Model] ...``: look at and
fix counters without writing code. Exit codes: 0 done, 1 an error (on stderr), 2 bad usage, 3 a problem in the data."""

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
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Type, TypeVar

from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.exceptions import PynamoDBException
from pynamodb.expressions.operand import Path
from pynamodb.models import Model

from . import _endpoint, _transport, exceptions, iam, regions
from ._options import Options, options_for
from ._version import __version__
from .counter import NextId, bind_counter
from .exceptions import ConfigurationError, CounterTableMissingError, CounterValueError, error_code, error_responses
from .mixin import AutoIncrementMixin
from .sequence import SequenceOptions, integer, number, setval_value

EXIT_ERROR, EXIT_PROBLEMS = 1, 3
#: DynamoDB's limit on TotalSegments of a parallel scan; at most MAX_SCAN_THREADS threads scan at once.
MAX_SEGMENTS, MAX_SCAN_THREADS = 1_000_000, 16
#: How many duplicates, hole ranges and off-sequence values a check report names.
_FIRST = 10
DESCRIPTION = "Look at and fix the counters of pynamodb-autoinc (a model's with --model package.module:Model)."
EPILOG = ("exit codes: 0 done, 1 an error (its message on stderr), 2 bad usage, 3 a problem found in the data "
          "(check: duplicates, or holes in a gapless sequence; list: a counter holding no integer; describe: a "
          "counter recording other options than its model)")

#: The event emitters the running command registered :func:`_check_answer` on.
_WATCHED: List[Any] = []
_T = TypeVar("_T", bound=Model)
log = logging.getLogger(__name__)


class CommandError(Exception):
    """A problem the command reports on stderr, exiting with status 1."""


class NotDynamoDBError(CommandError):
    """The endpoint answered, but not as DynamoDB does (an HTML page, another service)."""

    def __init__(self, status: int, content_type: str) -> None:
        super().__init__(f"HTTP {status}, {content_type or 'no Content-Type'}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    _resolve_model(parser, args)
    try:
        with _running(args.verbose):
            return int(args.run(args) or 0)
    except (CommandError, PynamoDBException, ValueError, *BOTOCORE_EXCEPTIONS) as exc:
        error = _html_answer(exc) or exc
        if isinstance(error, NotDynamoDBError):  # name the endpoint as the user named it
            meta: Any = type("Meta", (), {"host": args.host, "region": args.region})
            with contextlib.suppress(Exception):  # no model, or one that does not load
                meta = load_model(args.model, args.host, args.region).Meta
            where = _endpoint.resolve(meta)  # the URL, also one from AWS_ENDPOINT_URL_DYNAMODB
            endpoint = where.host or (f"of DynamoDB in {where.region}" if where.region else "of DynamoDB")
            message = (f"the endpoint {endpoint} did not answer as DynamoDB ({error}); check --host (or the model's "
                       "Meta.host): it must be the URL of DynamoDB or DynamoDB Local")
        else:
            message = str(error) if isinstance(error, CommandError) else f"{str(exc).rstrip('.')}{_fix_for(exc)}"
        print(f"error: {message}", file=sys.stderr)
        return EXIT_ERROR


def _resolve_model(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--model``, or the deprecated positional model of seed, check and policy (with a note on stderr)."""
    if not hasattr(args, "old_model"):
        return
    if args.old_model is not None:
        if args.model not in (None, args.old_model):
            parser.error(f"{args.command}: the model is named twice ({args.old_model!r} and --model {args.model!r}); "
                         "name it once, with --model")
        print(f"DeprecationWarning: `{args.command} MODEL` is deprecated and will be removed in the next release; "
              f"name the model with `{args.command} --model {args.old_model}`", file=sys.stderr)
        args.model = args.old_model
    if args.model is None:
        parser.error(f"{args.command}: name the model with --model package.module:Model")


@contextlib.contextmanager
def _running(verbose: int) -> Iterator[None]:
    """While the command runs: -v (-vv: DEBUG) shows the library's log on stderr; :func:`_watched` checks answers."""
    logger = logging.getLogger("pynamodb_autoinc")
    handler, level = logging.StreamHandler(sys.stderr), logger.level
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    if verbose:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
    try:
        yield
    finally:
        for events in _WATCHED:
            events.unregister("before-parse.dynamodb", _check_answer)
        _WATCHED.clear()
        logger.removeHandler(handler)
        logger.setLevel(level)


def _watched(table: Type[_T]) -> Type[_T]:
    """``table`` (a model or counter class), its client's answers checked until the command ends."""
    events = table._get_connection().connection.client.meta.events
    if all(seen is not events for seen in _WATCHED):
        events.register("before-parse.dynamodb", _check_answer)
        _WATCHED.append(events)
    return table


def _check_answer(response_dict: Dict[str, Any], **_: Any) -> None:
    """Raise :class:`NotDynamoDBError` for an answer that is not DynamoDB's JSON."""
    headers = response_dict.get("headers") or {}
    content_type = str(headers.get("content-type", headers.get("Content-Type", "")))
    status = int(response_dict.get("status_code") or 0)
    body = response_dict.get("body") or b""
    # some servers label DynamoDB's JSON text/html (older moto servers do): the body decides then
    looks_json = (body if isinstance(body, bytes) else str(body).encode()).lstrip()[:1] in (b"{", b"[")
    # botocore retries 500, 502, 503 and 504; if every retry gets an HTML page, _html_answer() recognises it
    if "json" not in content_type.lower() and not looks_json and status not in (500, 502, 503, 504):
        raise NotDynamoDBError(status, content_type)


def _html_answer(exc: BaseException) -> Optional[NotDynamoDBError]:
    """The error to report when ``exc`` carries an HTML page as DynamoDB's error message, else None."""
    for response in error_responses(exc):
        if str(response.get("Error", {}).get("Message", "")).lstrip().startswith("<"):
            meta = response.get("ResponseMetadata", {})
            headers = meta.get("HTTPHeaders") or {}
            return NotDynamoDBError(int(meta.get("HTTPStatusCode") or 0), str(headers.get("content-type", "")))
    return None


def _fix_for(exc: BaseException) -> str:
    """What to do about a failed request, from the errors behind it: ``"; check ..."``, or ``""``."""
    names = {c.__name__ for e in exceptions.causes(exc) for c in type(e).__mro__}
    code = error_code(exc)
    if "NoRegionError" in names:
        return "; name the AWS region with --region (or AWS_DEFAULT_REGION), or the endpoint with --host"
    if "NoCredentialsError" in names:
        return "; give AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)"
    if str(exc).startswith("Invalid endpoint:"):  # botocore's ValueError for a --host that is no URL
        return "; give --host (or the model's Meta.host) as a URL, such as http://127.0.0.1:8000"
    if "ConnectionError" in names or "ConnectTimeoutError" in names:
        return "; check the endpoint (--host, or the model's Meta.host) and that the server is running"
    if code in ("AccessDeniedException", "UnrecognizedClientException"):
        return "; use credentials allowed the request (docs: IAM lists what the command line needs)"
    if code == "ResourceNotFoundException":
        return "; check --host, --region and --table, or create the table"
    return ""


def _where(model: Type[Model]) -> str:
    """Where ``model``'s table is reached: `` at http://...`` or `` in AWS region ...``."""
    host = getattr(model.Meta, "host", None)
    region = getattr(model.Meta, "region", None) or os.environ.get("AWS_DEFAULT_REGION")
    return f" at {host}" if host else f" in AWS region {region}" if region else ""


def _positive(text: str, most: Optional[int] = None) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
    if number < 1 or (most is not None and number > most):
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {number}" if number < 1 else
                                         f"must be at most {most:,} (DynamoDB's limit), not {number:,}")
    return number


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pynamodb-autoinc", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"pynamodb-autoinc {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    # on the main parser, and on every command's with SUPPRESS (a value given before the command is kept)
    for options, default in ((parser, None), (common, argparse.SUPPRESS)):
        options.add_argument("--host", default=default, help="DynamoDB endpoint URL (default: the model's Meta.host)")
        options.add_argument("--region", default=default,
                             help="AWS region (default: the model's Meta.region, or AWS_DEFAULT_REGION)")
        options.add_argument("--table", default=default, help="counter table name (default: NextId, or the model's)")
        options.add_argument("-v", "--verbose", action="count", default=0 if default is None else default,
                             help="show the library's log on stderr: -v what it changes, -vv every step (DEBUG)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=help, description=help[0].upper() + help[1:])
        sub.set_defaults(run=run)
        return sub

    create = command("create-table", _create_table, "create the counter table and wait until it is active")
    create.add_argument("--billing-mode", choices=("PAY_PER_REQUEST", "PROVISIONED"), default="PAY_PER_REQUEST")
    create.add_argument("--read-capacity", type=_positive, default=1, help="with PROVISIONED (default 1)")
    create.add_argument("--write-capacity", type=_positive, default=1, help="with PROVISIONED (default 1)")
    listing = command("list", _list, "list the counters and their values (exit 3 if one holds no integer)")
    get = command("get", _get, "print one counter's value (the last value handed out)")
    get.add_argument("key", nargs="?", help="counter key (default: the model's)")
    get.add_argument("--model", help="package.module:Model whose counter to read")
    set_ = command("set", _set, "set a counter; the next value handed out is VALUE + step")
    set_.add_argument("value", type=int)
    set_.add_argument("--key", help="counter key (default: the model's)")
    set_.add_argument("--model", help="package.module:Model: refuse a value behind its stored IDs")
    set_.add_argument("--force", action="store_true", help="set it even behind the stored IDs")
    set_.add_argument("--is-called", action=argparse.BooleanOptionalAction, default=True,
                      help="as PostgreSQL's setval: the next value is VALUE + step (default), or VALUE itself")
    describe = command("describe", _describe, "show each counter's sequence (as pg_sequences) and the models using it")
    describe.add_argument("--model", action="append", default=[], help="package.module:Model (repeatable)")
    restart = command("restart", _restart, "restart a model's sequence: the next value is its start, or --with N")
    alter = command("alter", _alter, "record a model's changed options on its counter (ALTER SEQUENCE)")
    for sub in (restart, alter):
        sub.add_argument("--model", required=True, help="package.module:Model")
        sub.add_argument("--key", help="counter key (default: the model's)")
    restart.add_argument("--with", dest="value", type=int, help="the next value (default: the model's start)")
    restart.add_argument("--force", action="store_true", help="restart even at or behind the stored IDs")
    seed = command("seed", _seed, "move a model's counters up to the furthest IDs stored in its table, never back")
    check = command("check", _check, "look for duplicates and holes in a model's auto-increment IDs")
    policy = command("policy", _policy, "print the least-privilege IAM policy a model's saves need")
    for sub in (seed, check, policy):
        sub.add_argument("--model", help="package.module:Model")
        sub.add_argument("old_model", nargs="?", metavar="MODEL", help="deprecated: use --model MODEL")
    for sub in (seed, check):
        sub.add_argument("--segments", type=functools.partial(_positive, most=MAX_SEGMENTS), default=4,
                         help=f"parallel scan segments, 1 to {MAX_SEGMENTS:,} (default 4)")
    policy.add_argument("--account", default="*", help="AWS account ID for the table ARNs (default *)")
    for sub in (set_, restart, alter, seed):
        sub.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
    for sub in (listing, describe, check):
        sub.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


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
        raise CommandError(f"cannot import {spec!r}: {exc}; run the command from the directory that holds the "
                           "package, or add that directory to PYTHONPATH") from exc
    except Exception as exc:
        raise CommandError(f"cannot import {spec!r}: importing {module_name} raised {type(exc).__name__}: {exc}; "
                           "fix the module so that it imports") from exc
    model = getattr(module, name, None)
    if not (isinstance(model, type) and issubclass(model, Model)):
        raise CommandError(f"{spec!r} names no PynamoDB model class in {module_name}; name a Model subclass")
    for setting, value in _endpoint.overrides(model.Meta, host, region).items():
        setattr(model.Meta, setting, value)
        model._connection = None
    return model


def _autoinc_model(args: argparse.Namespace, spec: Optional[str] = None, counted: bool = True) -> Type[Model]:
    """:func:`load_model` of ``spec`` (default: --model), refused if it keeps no counter (or, ``counted``, queries)."""
    spec = spec or args.model
    model = load_model(spec, args.host, args.region)
    if not issubclass(model, AutoIncrementMixin):
        raise CommandError(f"{model.__name__} ({spec}) does not use AutoIncrementMixin, so it keeps no counter; name "
                           "a model that does (class User(AutoIncrementMixin, Model))")
    if counted and options_for(model).strategy == "query":
        raise CommandError(f"{model.__name__} uses the query strategy (Meta.autoinc_strategy = 'query'), which keeps "
                           f"no counter to {args.command}")
    return model


def _counter(args: argparse.Namespace, model: Optional[Type[Model]] = None) -> Type[NextId]:
    """The counter model the command reaches (watched): the model's, or --table's (NextId) at --host and --region."""
    if model is not None and args.table is None:
        counter = options_for(model).counter
    else:
        meta: Dict[str, Any] = _endpoint.overrides(model.Meta if model else NextId.Meta, args.host, args.region)
        meta["table_name"] = args.table or NextId.Meta.table_name
        # its own connection: NextId may have cached one for another endpoint, which a subclass would inherit
        counter = type("NextId", (NextId,), {"Meta": type("Meta", (), meta), "__module__": __name__,
                                             "_connection": None})
        counter = bind_counter(counter, model) if model is not None else counter
    log.debug("counter table %r%s", counter.Meta.table_name, _where(counter))
    return _watched(counter)


def _missing(table: Type[Model], model: Optional[Type[Model]] = None) -> CommandError:
    """The error for a missing table: ``model``'s own, or a counter table (with the command that creates it)."""
    name = table.Meta.table_name
    if model is not None and name == model.Meta.table_name:
        return CommandError(f"{model.__name__}'s table {name!r}{_where(table)} does not exist; point --host and "
                            "--region at the endpoint that holds it, or create the table")
    options = (("--host", getattr(table.Meta, "host", None)), ("--region", getattr(table.Meta, "region", None)),
               ("--table", name if name != NextId.Meta.table_name else None))
    create = " ".join(["pynamodb-autoinc", *(f"{option} {value}" for option, value in options if value)])
    return CommandError(f"counter table {name!r}{_where(table)} does not exist; create it with `{create} "
                        "create-table`, or name the table in use with --table (and --host, --region)")


@contextlib.contextmanager
def _counter_errors(counter: Type[NextId], model: Optional[Type[Model]] = None) -> Iterator[None]:
    """Report a missing counter table with the command that creates it (a CounterValueError names its own fix)."""
    try:
        yield
    except CounterTableMissingError as exc:
        raise _missing(counter, model) from exc


def _model_and_key(args: argparse.Namespace) -> Tuple[Optional[Type[Model]], str]:
    """The model named by --model (if any) and the counter key: the one given, or the model's."""
    name_it = "give KEY" if args.command == "get" else "use --key"
    if not args.model:
        if not args.key:
            raise CommandError(f"name the counter: {name_it}, or name a model with --model package.module:Model")
        return None, args.key
    model = _autoinc_model(args)
    opts, who = options_for(model), model.__name__
    # the form of the model's counter keys (orders, issues#<project>, receipts#<year>@<region>), and one of them
    scoped, regional = [opts.key, *(f"<{name}>" for name in opts.scope)], bool(opts.regions)
    form = "#".join([*scoped, *([f"<{opts.period}>"] if opts.period else [])]) + ("@<region>" if regional else "")
    example = "#".join([*scoped, *filter(None, [opts.current_period()])]) + (f"@{opts.regions[0]}" if regional else "")
    if args.key and not opts.owns(args.key):
        raise CommandError(f"counter {args.key!r} is not one of {who}'s, whose counter keys are {form!r}; name one "
                           f"with --key, or leave --model out to {args.command} a counter of your own")
    if not args.key and form != opts.key:
        per = " and ".join([*opts.scope, *(["period"] if opts.period else []), *(["region"] if opts.regions else [])])
        raise CommandError(f"{who} keeps one counter per {per}, so the model alone names none; {name_it}, such as "
                           f"{example!r} (`list` shows the counters)")
    return model, args.key or opts.key


def _plain_ids(opts: Options, so: str) -> None:
    """Refuse a model whose stored IDs do not show their counter (a period, a format): ``so`` says what fails."""
    why = f"numbers its IDs per period (Meta.autoinc_period = {opts.period!r})" if opts.period else \
        f"formats its IDs (Meta.autoinc_format = {opts.fmt!r})" if opts.fmt else ""
    if why:
        raise CommandError(f"{opts.model.__name__} {why}, so {so}")


def _create_table(args: argparse.Namespace) -> int:
    counter = _counter(args)
    if counter.exists():
        print(f"table {counter.Meta.table_name!r} exists")
        return 0
    # PynamoDB sends the capacity with PROVISIONED only
    counter.create_table(billing_mode=args.billing_mode, wait=True, read_capacity_units=args.read_capacity,
                         write_capacity_units=args.write_capacity)
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
        stored = raw.get(value_name)
        value = None if stored is None else integer(stored.get("N"))
        problem = {} if stored is None or value is not None else {
            "stored": stored, "problem": "not an integer" if "N" in stored else "not a number"}
        rows.append({"key": key, "value": value, **problem})
    rows.sort(key=lambda row: row["key"])
    if args.json:
        print(json.dumps(rows))
    else:
        _table(("KEY", "VALUE"), [(row["key"], f"{_shown(row['stored'])} ({row['problem']})" if "problem" in row
                                   else "" if row["value"] is None else str(row["value"])) for row in rows])
    bad = [row for row in rows if "problem" in row]
    for row in bad:
        print(f"error: counter {row['key']!r} holds {_shown(row['stored'])}, {row['problem']}: saves that use it fail "
              f"until it is set to the last ID handed out: pynamodb-autoinc set N --key {row['key']}", file=sys.stderr)
    return EXIT_PROBLEMS if bad else 0


def _shown(stored: Optional[Dict[str, Any]]) -> str:
    """A stored DynamoDB attribute as a person reads it: ``7``, ``1.5``, ``{"S": "x"}``, or ``none``."""
    if stored is None:
        return "none"
    value = integer(stored.get("N"))
    return json.dumps(stored) if "N" not in stored else str(stored["N"] if value is None else value)


def _get(args: argparse.Namespace) -> int:
    model, key = _model_and_key(args)
    counter = _counter(args, model)
    with _counter_errors(counter, model):
        value = counter.currval(key)
    if value is None:
        raise CommandError(f"counter {key!r} has no value yet; check the key (`list` shows the counters), or set it "
                           f"with `pynamodb-autoinc set N --key {key}`")
    print(value)
    return 0


def _checked(args: argparse.Namespace, model: Type[Model], key: str, is_called: bool) -> Tuple[SequenceOptions, int]:
    """``key``'s sequence and ``args.value`` (None: its start), refused off the sequence or (no --force) behind IDs."""
    opts = options_for(model)
    sequence = regions.sequence_of(opts, key)
    value = sequence.start if args.value is None else args.value
    sequence.check(key, value)
    if opts.regions:
        sequence.check_member(key, value, last=is_called)
    if args.force:
        return sequence, value
    _plain_ids(opts, f"{args.command} cannot compare {value} with the stored IDs; look up the last ID of that "
                     "counter yourself and use --force")
    # the stored IDs of every region, for a region's counter: a region's values must pass them all
    furthest = _furthest_ids(model, segments=4).get(key.rpartition("@")[0] if opts.regions else key)
    last = value if is_called else value - sequence.step
    if furthest is None or (last >= furthest if opts.step > 0 else last <= furthest):
        return sequence, value
    stores = f"already stores {opts.attribute}={furthest} under counter {key!r}"
    if args.command == "restart":
        raise CommandError(f"{model.__name__} {stores}; restarting at {value} would hand out stored IDs (those saves "
                           "are refused). Delete those items, restart past them with --with, or use --force")
    below, more = ("below", "higher") if opts.step > 0 else ("above", "lower")
    counts = "" if opts.step > 0 else f" counts down (Meta.autoinc_step = {opts.step}) and"
    raise CommandError(f"{model.__name__}{counts} {stores}; setting the counter to {value}, {below} that, would hand "
                       f"out stored IDs (those saves are refused, never overwritten). Set it to {furthest} or {more}, "
                       "as `seed` does. Use --force to set it anyway")


def _set(args: argparse.Namespace) -> int:
    model, key = _model_and_key(args)
    counter = _counter(args, model)
    # without a model, setval checks a region counter's value against the subsequence it records
    sequence = None if model is None else _checked(args, model, key, args.is_called)[0]
    with _counter_errors(counter, model):
        if args.dry_run:
            return _dry_run(counter, key, "set", sequence,
                            lambda item, seq: setval_value(key, args.value, args.is_called, seq))
        counter.setval(key, args.value, is_called=args.is_called, sequence=sequence)
    print(f"{key} = {args.value}" if args.is_called else f"{key}: the next value is {args.value}")
    return 0


def _restart(args: argparse.Namespace) -> int:
    model, key = _model_and_key(args)
    assert model is not None
    sequence, value = _checked(args, model, key, is_called=False)
    counter = _counter(args, model)
    with _counter_errors(counter, model):
        if args.dry_run:
            return _dry_run(counter, key, "restarted", sequence, lambda item, seq: value - sequence.step, replace=True)
        counter.restart(key, sequence, value)
    print(f"{key}: restarted; the next value is {value}")
    return 0


def _alter(args: argparse.Namespace) -> int:
    model, key = _model_and_key(args)
    assert model is not None
    sequence = regions.sequence_of(options_for(model), key)
    counter = _counter(args, model)
    with _counter_errors(counter, model):
        if args.dry_run:
            return _dry_run(counter, key, "altered", sequence,
                            lambda item, seq: counter.kept_value(key, item, sequence), replace=True)
        before = counter.alter(key, sequence)
    was = "" if before is None or before == sequence else f" (was: {before.encode()})"
    print(f"{key}: {'already runs' if before == sequence else 'now runs'} under {sequence.encode()}{was}")
    return 0


def _dry_run(counter: Type[NextId], key: str, verb: str, sequence: Optional[SequenceOptions],
             new_value: Callable[[Dict[str, Any], Optional[SequenceOptions]], Optional[int]],
             replace: bool = False) -> int:
    """Print ``key`` now and as ``new_value(item, options)`` leaves it; options must match unless ``replace``."""
    item = counter._item(key)
    recorded = counter._recorded(item)
    if not replace and sequence is not None and recorded is not None and recorded != sequence:
        raise counter._mismatch(key, sequence, recorded.encode())
    options = sequence or recorded
    value = new_value(item, options)
    before = item.get(counter.options.attr_name)
    after = before if options is None else {"S": options.encode()}
    was, now = ["none recorded" if s is None else s["S"] if "S" in s else json.dumps(s) for s in (before, after)]
    following = "" if options is None else \
        f"; the next value would be {options.start if value is None else value + options.step}"
    print(f"dry run: counter {key!r} would be {verb}: value {_shown(item.get(counter.next_id.attr_name))} -> "
          f"{_shown(None if value is None else {'N': str(value)})}, options {was} -> {now}{following}. "
          "Nothing was written")
    return 0


def _describe(args: argparse.Namespace) -> int:
    owners: List[Optional[Options]] = [options_for(_autoinc_model(args, spec)) for spec in args.model]
    rows: Dict[Tuple[str, str], Dict[str, Any]] = {}
    problems: List[str] = []

    def columns(sequence: Optional[SequenceOptions], last: Optional[int]) -> Dict[str, Any]:
        """The columns START to LEFT of a counter at ``last`` under ``sequence`` (None: unknown)."""
        if sequence is None:
            return {**dict.fromkeys(("start", "step", "min", "max", "cycle")), "last_value": last, "left": None}
        return {"start": sequence.start, "step": sequence.step, "min": sequence.minimum, "max": sequence.maximum,
                "cycle": sequence.cycle, "last_value": last, "left": sequence.remaining(last)}

    for owner, spec in zip(owners or [None], args.model or [""]):  # no model: every counter of --table
        counter = _counter(args, None if owner is None else owner.model)
        prefix, table = counter._autoinc_prefix, counter.Meta.table_name
        for raw in _scan_raw(counter, None if owner is None else owner.model):
            hash_key = raw.get(counter.next_key.attr_name, {}).get("S", "")
            key = hash_key[len(prefix):]
            # only the model's keys: not another model's starting with this one's (orders#eu), nor a pre-region counter
            if not hash_key.startswith(prefix) or (owner is not None and not owner.owns(key, any_region=True)):
                continue
            if (table, key) not in rows:
                try:
                    last, recorded = counter._value_in(key, raw), counter._recorded(raw, key)
                except CounterValueError as exc:  # one broken counter: the others are still described
                    problems.append(str(exc))
                    continue
                rows[table, key] = {"key": key, "table": table, **columns(recorded, last), "models": [],
                                    "recorded": recorded}
            row = rows[table, key]
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
                                f"{', '.join(expected.differences(row['recorded']))}, so one of them has its saves "
                                f"refused. If the model's Meta changed on purpose, record its options with "
                                f"`pynamodb-autoinc alter --model {spec} --key {key}`; otherwise make them agree"
                                + (f" (after appending a region, run `pynamodb-autoinc seed --model {spec}`)"
                                   if owner.regions else ""))
            row.update(columns(row["recorded"] or expected, row["last_value"]))
    report = [{k: v for k, v in row.items() if k != "recorded"} for _, row in sorted(rows.items())]
    if args.json:
        print(json.dumps(report))
    else:
        shown = ("key", "table", "start", "step", "min", "max", "cycle", "last_value", "left")
        _table(("KEY", "TABLE", "START", "STEP", "MIN", "MAX", "CYCLE", "LAST", "LEFT", "MODELS"), [
            tuple("" if r[c] is None else "yes" if r[c] is True else "no" if r[c] is False else str(r[c])
                  for c in shown) + (", ".join(r["models"]),) for r in report])
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return EXIT_PROBLEMS if problems else 0


def _seed(args: argparse.Namespace) -> int:
    model = _autoinc_model(args)
    opts = options_for(model)
    _plain_ids(opts, "seed cannot read the counter each ID belongs to; set each counter with "
                     "`pynamodb-autoinc set N --key KEY` (`list` shows the keys)")
    counter = _counter(args, model)
    furthest = _furthest_ids(model, args.segments)
    if opts.regions:
        report = regions.seed(opts, counter, furthest, dry_run=args.dry_run)
        print("\n".join(report) if report else f"{model.__name__} stores no IDs and has no counters: nothing to seed")
        if args.dry_run and report:
            print("dry run: nothing was written")
        return 0
    moved, already = ("raised to", "already at or above") if opts.step > 0 else ("lowered to", "already at or below")
    sequence = opts.sequence
    outside = sorted((key, value) for key, value in furthest.items() if not sequence.contains(value))
    if outside:  # refused before any counter moves: a counter put there would refuse every save
        raise CommandError(
            f"{model.__name__} stores {opts.attribute} values outside its sequence's bounds ({sequence.minimum}.."
            f"{sequence.maximum}): {', '.join(f'{value} under counter {key!r}' for key, value in outside)}; widen them "
            f"(Meta.autoinc_min / autoinc_max, then `pynamodb-autoinc alter --model {args.model}`) or renumber those "
            "items; nothing was moved")
    for key, value in sorted(furthest.items()):
        with _counter_errors(counter, model):
            last = counter.currval(key) if sequence.cycle else None
            if last is not None:
                # after a wrap the furthest stored ID is behind the counter, not ahead: only a new counter is seeded
                print(f"{'dry run: ' if args.dry_run else ''}{key}: left at {last}: the sequence cycles, so the "
                      f"furthest stored ID, {value}, need not be the last one handed out; if it is behind, move it "
                      f"with `pynamodb-autoinc set N --model {args.model}`")
            elif args.dry_run:
                item = counter._item(key)
                stored = item.get(counter.next_id.attr_name)
                held = None if stored is None else number(stored.get("N"))
                # as raise_to does: a fraction behind value is moved, a counter staying with no integer raises
                if stored is None or (held is not None and (held < value if opts.step > 0 else held > value)):
                    print(f"dry run: {key}: would be {moved} {value} (from {_shown(stored)})")
                else:
                    print(f"dry run: {key}: would stay at {counter._value_in(key, item)}, {already} {value}")
            else:
                print(f"{key}: {moved if counter.raise_to(key, value, step=opts.step) else already} {value}")
    if not furthest:
        print(f"{model.__name__} stores no IDs: nothing to seed")
    elif args.dry_run:
        print("dry run: nothing was written")
    return 0


def _check(args: argparse.Namespace) -> int:
    model = _autoinc_model(args, counted=False)
    opts = options_for(model)
    _plain_ids(opts, "check cannot tell which sequence a stored ID belongs to; check such IDs with a query")
    counter = _watched(opts.counter) if opts.sequence.cycle else None
    # with Meta.autoinc_regions, IDs are audited as key@region on that region's subsequence (IDs on none: under key)
    layout = regions.regions_of(opts) if opts.regions else []
    groups: Dict[str, Tuple[SequenceOptions, List[int]]] = {}
    for key, values in _ids_by_counter(model, args.segments).items():
        for value in values:
            position = opts.sequence.position(value) if layout else None
            region, sequence = ("", opts.sequence) if position is None else layout[position % len(layout)]
            groups.setdefault(f"{key}@{region}" if region else key, (sequence, []))[1].append(value)
    report = [{"key": key, **_audit(values, sequence, counter.currval(key) if counter else None)}
              for key, (sequence, values) in sorted(groups.items())]
    if args.json:
        print(json.dumps(report))
    else:
        rows = []
        for r in report:
            holes = ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in r["hole_ranges"])
            off = ", ".join(map(str, r["first_off_sequence"]))
            rows.append((r["key"], r["items"], r["min"], r["max"], ", ".join(map(str, r["duplicates"][:_FIRST])) or "0",
                         f"{r['holes']} (first: {holes})" if r["holes"] else "0",
                         f"{r['off_sequence']} ({off})" if r["off_sequence"] else "0"))
        _table(("COUNTER", "ITEMS", "MIN", "MAX", "DUPLICATES", "HOLES", "OFF-SEQUENCE"), rows)
        if not report:
            print(f"{model.__name__} stores no IDs")
    return EXIT_PROBLEMS if any(r["duplicates"] or (opts.gapless and r["holes"]) for r in report) else 0


def _audit(values: List[int], sequence: SequenceOptions, last: Optional[int] = None) -> Dict[str, Any]:
    """Duplicates, holes (the first runs in ``hole_ranges``, as ``[first, last]`` in sequence order) and off-sequence
    values among the stored IDs of one counter; a cycling one at ``last`` is read as a ring (docs/architecture.md)."""
    values = sorted(values)
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
    placed = [(value, place(value)) for value in values]
    positions = sorted({position for _, position in placed if position is not None})
    off = sorted({value for value, position in placed if position is None})
    holes, previous = 0, (positions[0] - 1 if ring and positions else -1)
    ranges: List[List[int]] = []
    for position in positions:
        if position > previous + 1:
            holes += position - previous - 1
            if len(ranges) < _FIRST:
                ranges.append([value_at(previous + 1), value_at(position - 1)])
        previous = position
    return {"items": len(values), "min": values[0], "max": values[-1], "holes": holes, "hole_ranges": ranges,
            "duplicates": sorted({a for a, b in zip(values, values[1:]) if a == b}),
            "off_sequence": sum(p is None for _, p in placed), "first_off_sequence": off[:_FIRST]}


def _policy(args: argparse.Namespace) -> int:
    model = load_model(args.model, args.host, args.region)
    print(json.dumps(iam.policy(model, region=args.region or "*", account=args.account), indent=2))
    return 0


def _scan_failed(table: Type[Model], exc: PynamoDBException, model: Optional[Type[Model]] = None) -> CommandError:
    if error_code(exc) == "ResourceNotFoundException":
        return _missing(table, model)
    return CommandError(  # main() reports an HTML answer behind ``exc`` as NotDynamoDBError
        f"could not scan table {table.Meta.table_name!r}{_where(table)}: {str(exc).rstrip('.')}{_fix_for(exc)}")


def _scan_raw(counter: Type[NextId], model: Optional[Type[Model]] = None) -> List[Dict[str, Any]]:
    try:
        return _transport.scan(counter._get_connection().connection, counter.Meta.table_name)
    except PynamoDBException as exc:
        raise _scan_failed(counter, exc, model) from exc


def _furthest_ids(model: Type[Model], segments: int) -> Dict[str, int]:
    """The furthest stored ID per counter key: the largest, or the smallest for a negative step."""
    pick = max if options_for(model).step > 0 else min
    return {key: pick(values) for key, values in _ids_by_counter(model, segments).items() if values}


def _ids_by_counter(model: Type[Model], segments: int) -> Dict[str, List[int]]:
    """Every stored auto-increment value by counter key, from a parallel scan (the items holding none: a note)."""
    opts = options_for(model)
    names = [opts.attribute, *opts.scope, *([str(model._hash_keyname)] if opts.strategy == "query" else [])]
    attrs = model.get_attributes()
    # each stored name as one name (PynamoDB takes Paths too): a dot in a name is no path into a map
    wanted: List[Any] = [Path([stored]) for stored in sorted({attrs[name].attr_name for name in names})]
    groups: Dict[str, List[int]] = {}
    scanned, skipped, lock, live = 0, 0, threading.Lock(), sys.stderr.isatty()
    # a bounded pool, each thread scanning every workers-th segment, however many segments there are
    workers = min(segments, MAX_SCAN_THREADS)

    def key_of(item: Model) -> Optional[str]:
        if opts.strategy == "query":
            return f"{model.Meta.table_name}#{getattr(item, str(model._hash_keyname))}"
        try:
            return opts.counter_key(item, None)
        except ValueError:
            return None  # a scope value is missing on this item

    def scan(first: int) -> None:
        nonlocal scanned, skipped
        for segment in range(first, segments, workers):
            for item in model.scan(segment=segment, total_segments=segments, attributes_to_get=wanted,
                                   consistent_read=True):
                value, key = integer(raw := getattr(item, opts.attribute)), key_of(item)
                if value is not None and opts.to_python(value) != raw:
                    value = None  # text such as "007" or "1e3": another key than the ID the library writes
                with lock:
                    scanned += 1
                    if live and scanned % 1000 == 0:
                        print(f"\rscanned {scanned:,} items", end="", file=sys.stderr, flush=True)
                    if value is None or key is None:
                        skipped += 1
                    else:
                        groups.setdefault(key, []).append(value)

    _watched(model)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            list(pool.map(scan, range(workers)))
        except PynamoDBException as exc:
            raise _scan_failed(model, exc, model) from exc
    if live:
        print(f"\rscanned {scanned:,} items", file=sys.stderr)
    if skipped:
        items, holds, lack = ("item", "holds", "lacks") if skipped == 1 else ("items", "hold", "lack")
        lacks = f" or {lack} a value of {', '.join(opts.scope)}" if opts.scope else ""
        print(f"note: {skipped} {items} of {model.__name__} {holds} no integer {opts.attribute}{lacks}; left out",
              file=sys.stderr)
    return groups


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    for row in (header, *rows):
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
