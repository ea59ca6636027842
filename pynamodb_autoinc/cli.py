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
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Type, TypeVar

from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.exceptions import PynamoDBException
from pynamodb.models import Model

from . import _endpoint, _transport, exceptions, iam, regions
from ._cli_ids import MAX_SCAN_THREADS, Scan, furthest, unreadable
from ._cli_plans import plan_alter, plan_restart, plan_seed, plan_set
from ._cli_progress import progress
from ._cli_report import Description, audit, by_counter, print_check, print_table, shown
from ._options import Options, options_for
from ._sharing import sharing
from ._version import __version__
from .counter import NextId, bind_counter
from .exceptions import CounterTableMissingError, error_code, error_responses
from .mixin import AutoIncrementMixin
from .sequence import SequenceOptions, integer

EXIT_ERROR, EXIT_PROBLEMS = 1, 3
#: DynamoDB's limit on TotalSegments of a parallel scan; at most MAX_SCAN_THREADS threads scan at once.
MAX_SEGMENTS = 1_000_000
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
                         help=f"parallel scan segments, 1 to {MAX_SEGMENTS:,} (default 4), at most {MAX_SCAN_THREADS} "
                              "scanned at once")
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
        print_table(("KEY", "VALUE"), [(row["key"], f"{shown(row['stored'])} ({row['problem']})" if "problem" in row
                                   else "" if row["value"] is None else str(row["value"])) for row in rows])
    bad = [row for row in rows if "problem" in row]
    for row in bad:
        print(f"error: counter {row['key']!r} holds {shown(row['stored'])}, {row['problem']}: saves that use it fail "
              f"until it is set to the last ID handed out: pynamodb-autoinc set N --key {row['key']}", file=sys.stderr)
    return EXIT_PROBLEMS if bad else 0


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



def _readable(opts: Options, so: str) -> None:
    """Refuse a model whose stored IDs do not show their counter and number: ``so`` says what fails."""
    why = unreadable(opts)
    if why:
        raise CommandError(f"{opts.model.__name__} {why}, so {so}")


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
    _readable(opts, f"{args.command} cannot compare {value} with the stored IDs; look up the last ID of that "
                    "counter yourself and use --force")
    # the stored IDs of every region, for a region's counter: a region's values must pass them all
    furthest = _furthest_ids(model, segments=4).get(key.rpartition("@")[0] if opts.regions else key)
    last = value if is_called else value - sequence.step
    if furthest is None or (last >= furthest if opts.step > 0 else last <= furthest):
        return sequence, value
    label = key.rpartition("@")[0].rpartition("#")[2] if opts.regions else key.rpartition("#")[2]
    shown_id = repr(opts.to_python(furthest, label if opts.period else None)) if opts.fmt else furthest
    stores = f"already stores {opts.attribute}={shown_id} under counter {key!r}"
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
        plan = plan_set(counter, key, args.value, args.is_called, sequence)
        if args.dry_run:
            print(plan.preview())
            return 0
        plan.write()
    print(f"{key} = {args.value}" if args.is_called else f"{key}: the next value is {args.value}")
    return 0


def _restart(args: argparse.Namespace) -> int:
    model, key = _model_and_key(args)
    assert model is not None
    sequence, value = _checked(args, model, key, is_called=False)
    counter = _counter(args, model)
    with _counter_errors(counter, model):
        plan = plan_restart(counter, key, sequence, value)
        if args.dry_run:
            print(plan.preview())
            return 0
        plan.write()
    print(f"{key}: restarted; the next value is {value}")
    return 0


def _alter(args: argparse.Namespace) -> int:
    model, key = _model_and_key(args)
    assert model is not None
    sequence = regions.sequence_of(options_for(model), key)
    counter = _counter(args, model)
    with _counter_errors(counter, model):
        plan = plan_alter(counter, key, sequence)
        if args.dry_run:
            print(plan.preview())
            return 0
        before = plan.write()
    was = "" if before is None or before == sequence else f" (was: {before.encode()})"
    print(f"{key}: {'already runs' if before == sequence else 'now runs'} under {sequence.encode()}{was}")
    return 0


def _describe(args: argparse.Namespace) -> int:
    owners: List[Optional[Options]] = [options_for(_autoinc_model(args, spec)) for spec in args.model]
    description = Description()
    for owner, spec in zip(owners or [None], args.model or [""]):  # no model: every counter of --table
        model = None if owner is None else owner.model
        counter = _counter(args, model)
        description.add(counter, _scan_raw(counter, model), owner, spec)
    description.print(args.json)
    for problem in description.problems:
        print(f"error: {problem}", file=sys.stderr)
    return EXIT_PROBLEMS if description.problems else 0


def _seed(args: argparse.Namespace) -> int:
    model = _autoinc_model(args)
    opts = options_for(model)
    _readable(opts, "seed cannot read the counter each ID belongs to; set each counter with "
                    "`pynamodb-autoinc set N --key KEY` (`list` shows the keys)")
    counter = _counter(args, model)
    furthest = _furthest_ids(model, args.segments)
    if opts.regions:
        report = regions.seed(opts, counter, furthest, dry_run=args.dry_run)
        print("\n".join(report) if report else f"{model.__name__} stores no IDs and has no counters: nothing to seed")
        if args.dry_run and report:
            print("dry run: nothing was written")
        return 0
    _refuse_outside(opts, furthest, args.model)
    with _counter_errors(counter, model):
        for step in plan_seed(counter, opts, furthest):
            print(step.preview(args.model, dry_run=args.dry_run) or step.apply(counter))
    if not furthest:
        print(f"{model.__name__} stores no IDs: nothing to seed")
    elif args.dry_run:
        print("dry run: nothing was written")
    return 0


def _refuse_outside(opts: Options, furthest: Dict[str, int], spec: str) -> None:
    """Refuse, before any counter moves, stored IDs outside the bounds: a counter put there would refuse saves."""
    sequence = opts.sequence
    outside = sorted((key, value) for key, value in furthest.items() if not sequence.contains(value))
    if outside:
        raise CommandError(
            f"{opts.model.__name__} stores {opts.attribute} values outside its sequence's bounds ({sequence.minimum}.."
            f"{sequence.maximum}): {', '.join(f'{value} under counter {key!r}' for key, value in outside)}; widen them "
            f"(Meta.autoinc_min / autoinc_max, then `pynamodb-autoinc alter --model {spec}`) or renumber those "
            "items; nothing was moved")


def _check(args: argparse.Namespace) -> int:
    model = _autoinc_model(args, counted=False)
    opts = options_for(model)
    _readable(opts, "check cannot tell which sequence a stored ID belongs to; check such IDs with a query")
    counter = _watched(opts.counter) if opts.sequence.cycle else None
    ids = _ids_by_counter(model, args.segments, quiet=args.json)
    for other in sharing(model, opts.counter._where(opts.key)):  # models sharing the counter: their IDs are no holes
        for key, values in _ids_by_counter(other, args.segments, quiet=args.json).items():
            ids.setdefault(key, []).extend(values)
    groups = by_counter(opts, ids)
    report = [{"key": key, **audit(values, sequence, counter.currval(key) if counter else None)}
              for key, (sequence, values) in sorted(groups.items())]
    if args.json:
        print(json.dumps(report))
    else:
        print_check(report)
        if not report:
            print(f"{model.__name__} stores no IDs")
    return EXIT_PROBLEMS if any(r["duplicates"] or (opts.gapless and r["holes"]) for r in report) else 0


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
    return furthest(_ids_by_counter(model, segments), options_for(model).step)


def _ids_by_counter(model: Type[Model], segments: int, quiet: bool = False) -> Dict[str, List[int]]:
    """Every stored auto-increment value by counter key, from a parallel scan showing its progress on a terminal
    (unless ``quiet``); the items holding none: a note on stderr."""
    try:
        return Scan(_watched(model), segments, progress(segments, quiet=quiet)).run()
    except PynamoDBException as exc:
        raise _scan_failed(model, exc, model) from exc
