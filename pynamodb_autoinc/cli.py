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
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Type, TypeVar

from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.exceptions import PynamoDBException
from pynamodb.models import Model

from . import _endpoint, _transport, exceptions, iam, regions
from ._cli_ids import MAX_SCAN_THREADS, Scan, tables, unreadable
from ._cli_ids import furthest as furthest_ids
from ._cli_plans import plan_alter, plan_restart, plan_seed, plan_set
from ._cli_progress import progress
from ._cli_report import Description, behind, by_counter, check_row, print_check, print_table, ring_end, shown
from ._options import OPTIONS_CACHE, Options, options_for
from ._sharing import sharing
from ._version import __version__
from .counter import NextId, bind_counter, rebind
from .exceptions import CounterTableMissingError, CounterValueError, error_code, error_responses
from .mixin import AutoIncrementMixin
from .sequence import SequenceOptions, integer

EXIT_ERROR, EXIT_USAGE, EXIT_PROBLEMS = 1, 2, 3
#: The commands that take one model (the others take --model repeated, or a module of models).
ONE_MODEL = ("get", "set", "restart", "alter")
#: DynamoDB's limit on TotalSegments of a parallel scan; at most MAX_SCAN_THREADS threads scan at once.
MAX_SEGMENTS = 1_000_000
DESCRIPTION = "Look at and fix the counters of pynamodb-autoinc (a model's with --model package.module:Model)."
EPILOG = ("exit codes: 0 done, 1 an error (its message on stderr), 2 bad usage, 3 a problem found in the data "
          "(check: duplicates, holes in a gapless sequence, or a counter behind its stored IDs; list: a counter "
          "holding no integer; describe: a counter recording other options than its model)")

REPEATED = ("package.module:Model, or package.module for every model defined there that uses AutoIncrementMixin; "
            "repeatable")
#: The event emitters the running command registered :func:`_check_answer` on.
_WATCHED: List[Any] = []
_T = TypeVar("_T", bound=Model)
log = logging.getLogger(__name__)


class CommandError(Exception):
    """A problem the command reports on stderr, exiting with status 1."""


class UsageError(CommandError):
    """Bad usage found once the models are imported (a module of several models where one is wanted): exit 2."""


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
    except UsageError as exc:
        parser.error(f"{args.command}: {exc}")
    except (CommandError, PynamoDBException, ValueError, *BOTOCORE_EXCEPTIONS) as exc:
        print(f"error: {_message(args, exc)}", file=sys.stderr)
    return EXIT_ERROR


def _message(args: argparse.Namespace, exc: BaseException) -> str:
    """The one line that reports ``exc``: an endpoint that is not DynamoDB is named as the user named it."""
    error = _html_answer(exc) or exc
    if not isinstance(error, NotDynamoDBError):
        return str(error) if isinstance(error, CommandError) else f"{str(exc).rstrip('.')}{_fix_for(exc)}"
    meta: Any = type("Meta", (), {"host": args.host, "region": args.region})
    with contextlib.suppress(Exception):  # no model, or one that does not load
        meta = load_model(_specs(args)[0], args.host, args.region).Meta
    where = _endpoint.resolve(meta)  # the URL, also one from AWS_ENDPOINT_URL_DYNAMODB
    endpoint = where.host or (f"of DynamoDB in {where.region}" if where.region else "of DynamoDB")
    return (f"the endpoint {endpoint} did not answer as DynamoDB ({error}); check --host (or the model's "
            "Meta.host): it must be the URL of DynamoDB or DynamoDB Local")


def _resolve_model(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--model`` (a list), or the deprecated positional model of seed, check and policy (with a note on stderr);
    a command that takes one model refuses several."""
    if getattr(args, "old_model", None) is not None:
        if args.model not in (None, [args.old_model]):
            parser.error(f"{args.command}: the model is named twice ({args.old_model!r} and --model "
                         f"{' '.join(args.model)}); name it once, with --model")
        print(f"DeprecationWarning: `{args.command} MODEL` is deprecated and will be removed in the next release; "
              f"name the model with `{args.command} --model {args.old_model}`", file=sys.stderr)
        args.model = [args.old_model]
    if args.command in ONE_MODEL and len(_specs(args)) > 1:
        parser.error(f"{args.command}: takes one model, but --model was given {len(args.model)} times "
                     f"({', '.join(args.model)}); run it once per model")
    if hasattr(args, "old_model") and not args.model:
        parser.error(f"{args.command}: name the model with --model package.module:Model")


def _specs(args: argparse.Namespace) -> List[str]:
    """The models named with --model (none: an empty list)."""
    return list(getattr(args, "model", None) or [])


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


class _Once(argparse.Action):
    """Stores an option's value, as ``store`` does; the same option given again (before the command or after it)
    is bad usage, never a value silently dropped. ``seen``: the options given so far in this command line."""

    seen: Dict[str, Any] = {}

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: Optional[str] = None) -> None:
        if option_string is not None:
            if self.dest in self.seen:
                parser.error(f"{option_string} given twice ({self.seen[self.dest]!r} and {values!r}); give it once")
            self.seen[self.dest] = values
        setattr(namespace, self.dest, values)


def _parser() -> argparse.ArgumentParser:
    once = type("Once", (_Once,), {"seen": {}})  # the options of one command line
    parser = argparse.ArgumentParser(prog="pynamodb-autoinc", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"pynamodb-autoinc {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    for each in (parser, common):
        each.register("action", None, once)
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
        sub.register("action", None, once)
        sub.set_defaults(run=run)
        return sub

    create = command("create-table", _create_table, "create the counter table and wait until it is active")
    create.add_argument("--billing-mode", choices=("PAY_PER_REQUEST", "PROVISIONED"), default="PAY_PER_REQUEST")
    create.add_argument("--read-capacity", type=_positive, default=1, help="with PROVISIONED (default 1)")
    create.add_argument("--write-capacity", type=_positive, default=1, help="with PROVISIONED (default 1)")
    listing = command("list", _list, "list the counters and their values (exit 3 if one holds no integer)")
    get = command("get", _get, "print one counter's value (the last value handed out)")
    get.add_argument("key", nargs="?", help="counter key (default: the model's)")
    get.add_argument("--model", action="append", help="package.module:Model whose counter to read (a model "
                     "numbering per period: the current period's)")
    set_ = command("set", _set, "set a counter; the next value handed out is VALUE + step")
    set_.add_argument("value", type=int)
    set_.add_argument("--key", help="counter key (default: the model's)")
    set_.add_argument("--model", action="append", help="package.module:Model: refuse a value behind its stored IDs")
    set_.add_argument("--force", action="store_true", help="set it even behind the stored IDs")
    set_.add_argument("--is-called", action=argparse.BooleanOptionalAction, default=True,
                      help="as PostgreSQL's setval: the next value is VALUE + step (default), or VALUE itself")
    describe = command("describe", _describe, "show each counter's sequence (as pg_sequences) and the models using it")
    describe.add_argument("--model", action="append", help=REPEATED)
    restart = command("restart", _restart, "restart a model's sequence: the next value is its start, or --with N")
    alter = command("alter", _alter, "record a model's changed options on its counter (ALTER SEQUENCE)")
    for sub in (restart, alter):
        sub.add_argument("--model", action="append", required=True, help="package.module:Model")
        sub.add_argument("--key", help="counter key (default: the model's)")
    restart.add_argument("--with", dest="value", type=int, help="the next value (default: the model's start)")
    restart.add_argument("--force", action="store_true", help="restart even at or behind the stored IDs")
    seed, check = _scanning_commands(command)
    for sub in (set_, restart, alter, seed):
        sub.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
    for sub in (listing, describe, check):
        sub.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


def _scanning_commands(command: Callable[..., argparse.ArgumentParser]) -> Tuple[argparse.ArgumentParser, ...]:
    """The commands taking several models: seed and check (which scan their tables), and policy."""
    seed = command("seed", _seed, "move the models' counters up to the furthest IDs stored in their tables, never "
                                  "back")
    check = command("check", _check, "look for duplicates, holes and counters behind their stored IDs in the models' "
                                     "auto-increment IDs")
    policy = command("policy", _policy, "print the least-privilege IAM policy the models' saves need (one policy)")
    for sub in (seed, check, policy):
        sub.add_argument("--model", action="append", help=REPEATED)
        sub.add_argument("old_model", nargs="?", metavar="MODEL", help="deprecated: use --model MODEL")
    for sub in (seed, check):
        sub.add_argument("--segments", type=functools.partial(_positive, most=MAX_SEGMENTS), default=4,
                         help=f"parallel scan segments, 1 to {MAX_SEGMENTS:,} (default 4), at most {MAX_SCAN_THREADS} "
                              "scanned at once")
    policy.add_argument("--account", default="*", help="AWS account ID for the table ARNs (default *)")
    policy.add_argument("--own-counters-only", action="store_true",
                        help="grant the counter table only for the models' own counter keys (dynamodb:LeadingKeys)")
    return seed, check


def _import(spec: str) -> Any:
    """The module ``spec`` (``package.module``, or the module of ``package.module:Model``) names."""
    module_name = spec.partition(":")[0]
    if not module_name:
        raise CommandError(f"name a model as package.module:Model, or a module as package.module, not {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # import from the current directory, as `python -m` would
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandError(f"cannot import {spec!r}: {exc}; run the command from the directory that holds the "
                           "package, or add that directory to PYTHONPATH") from exc
    except Exception as exc:
        raise CommandError(f"cannot import {spec!r}: importing {module_name} raised {type(exc).__name__}: {exc}; "
                           "fix the module so that it imports") from exc


def load_model(spec: str, host: Optional[str] = None, region: Optional[str] = None) -> Type[Model]:
    """Import ``package.module:Model``; ``host``/``region`` override its Meta."""
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise CommandError(f"name a model as package.module:Model, not {spec!r}")
    model = getattr(_import(spec), name, None)
    if not (isinstance(model, type) and issubclass(model, Model)):
        raise CommandError(f"{spec!r} names no PynamoDB model class in {module_name}; name a Model subclass")
    _override(model, host, region)
    return model


#: The counter each model the command loaded draws from as its Meta declares it, before --host and --region.
#:
#: :meta hide-value:
_DECLARED: weakref.WeakKeyDictionary[type, Tuple[Any, ...]] = weakref.WeakKeyDictionary()


def _override(model: Type[Model], host: Optional[str], region: Optional[str]) -> None:
    """Reach ``model`` at ``host`` and ``region`` (those given): its Meta takes them, with a home region
    (Meta.autoinc_home_region) ``host`` is its home endpoint too, and its options are read again."""
    if issubclass(model, AutoIncrementMixin) and model not in _DECLARED:
        opts = options_for(model)
        if opts.strategy == "counter":
            _DECLARED[model] = opts.counter._where(opts.key)
    settings: Dict[str, Any] = _endpoint.overrides(model.Meta, host, region)
    if host and getattr(model.Meta, "autoinc_home_region", None) and issubclass(model, AutoIncrementMixin):
        settings["autoinc_home_host"] = host
    for setting, value in settings.items():
        setattr(model.Meta, setting, value)
    if settings:
        model._connection = None
        if OPTIONS_CACHE in model.__dict__:
            delattr(model, OPTIONS_CACHE)


def _autoinc_model(args: argparse.Namespace, spec: Optional[str] = None, counted: bool = True) -> Type[Model]:
    """:func:`load_model` of ``spec`` (default: --model), refused if it keeps no counter (or, ``counted``, queries)."""
    spec = spec or _specs(args)[0]
    model = load_model(spec, args.host, args.region)
    if not issubclass(model, AutoIncrementMixin):
        raise CommandError(f"{model.__name__} ({spec}) does not use AutoIncrementMixin, so it keeps no counter; name "
                           "a model that does (class User(AutoIncrementMixin, Model))")
    if counted and options_for(model).strategy == "query":
        raise CommandError(f"{model.__name__} uses the query strategy (Meta.autoinc_strategy = 'query'), which keeps "
                           f"no counter to {args.command}")
    return model


def _named(args: argparse.Namespace, counted: bool = True) -> List[Tuple[str, Type[Model]]]:
    """Each model --model names, as ``(spec, model)``: a module names every model defined in it that uses
    AutoIncrementMixin (with ``counted``, a query-strategy one is left out, with a note)."""
    found: List[Tuple[str, Type[Model]]] = []
    for spec in _specs(args):
        if ":" in spec:
            model = _autoinc_model(args, spec, counted) if args.command != "policy" else \
                load_model(spec, args.host, args.region)
            found.append((spec, model))
        else:
            found.extend(_module_models(args, spec, counted))
    if args.command in ONE_MODEL and len(found) > 1:
        raise UsageError(f"takes one model, but {' '.join(_specs(args))} names {len(found)} "
                         f"({', '.join(spec for spec, _ in found)}); name one as package.module:Model")
    unique: Dict[Type[Model], str] = {}
    for spec, model in found:  # each model once, as first named
        unique.setdefault(model, spec)
    return [(spec, model) for model, spec in unique.items()]


def _module_models(args: argparse.Namespace, name: str, counted: bool) -> List[Tuple[str, Type[Model]]]:
    """The models module ``name`` defines that use AutoIncrementMixin (not those it imports), in their order."""
    module = _import(name)
    found: List[Tuple[str, Type[Model]]] = []
    for attribute, model in vars(module).items():
        if isinstance(model, type) and issubclass(model, AutoIncrementMixin) and issubclass(model, Model) \
                and model.__module__ == module.__name__:
            spec = f"{module.__name__}:{attribute}"
            _override(model, args.host, args.region)
            if counted and options_for(model).strategy == "query":
                print(f"note: {spec} uses the query strategy, which keeps no counter to {args.command}; left out",
                      file=sys.stderr)
                continue
            found.append((spec, model))
    if not found:
        raise CommandError(f"module {name!r} defines no model that uses AutoIncrementMixin; name a model as "
                           f"{name}:Model, or a module that defines one")
    return found


def _group(args: argparse.Namespace, model: Type[Model]) -> List[Type[Model]]:
    """``model`` and the live model classes drawing from the counter its Meta declares (a subclass, models
    sharing its Meta.autoinc_key), each reached where --host and --region send ``model``."""
    where = _DECLARED.get(model)
    others = [] if where is None else sharing(model, where)
    for other in others:
        _override(other, args.host, args.region)
    return [model, *others]


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
        opts = None if model is None else options_for(model)
        if opts is not None and opts.home_region is not None:  # its counters live in the home region, as it saves
            counter = rebind(counter, {"region": opts.home_region, "host": opts.home_host})
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
    if not args.model:
        if not args.key:
            raise CommandError(f"name the counter: {_name_it(args)}, or name a model with --model "
                               "package.module:Model")
        return None, args.key
    ((_, model),) = _named(args)
    return model, _key_of(args, options_for(model))


def _name_it(args: argparse.Namespace) -> str:
    return "give KEY" if args.command == "get" else "use --key"


def _key_of(args: argparse.Namespace, opts: Options) -> str:
    """The counter key of ``opts.model`` the command names: --key (refused if not the model's), or its one
    counter (for get, the current period's of a model numbering only per period)."""
    who = opts.model.__name__
    # the form of the model's counter keys (orders, issues#<project>, receipts#<year>@<region>), and one of them
    scoped, regional = [opts.key, *(f"<{name}>" for name in opts.scope)], bool(opts.regions)
    form = "#".join([*scoped, *([f"<{opts.period}>"] if opts.period else [])]) + ("@<region>" if regional else "")
    example = "#".join([*scoped, *filter(None, [opts.current_period()])]) + (f"@{opts.regions[0]}" if regional else "")
    if args.key and not opts.owns(args.key):
        raise CommandError(f"counter {args.key!r} is not one of {who}'s, whose counter keys are {form!r}; name one "
                           f"with --key, or leave --model out to {args.command} a counter of your own")
    if args.key:
        return str(args.key)
    if args.command == "get" and opts.period and form == f"{opts.key}#<{opts.period}>":
        return f"{opts.key}#{opts.current_period()}"
    if form != opts.key:
        per = " and ".join([*opts.scope, *(["period"] if opts.period else []), *(["region"] if opts.regions else [])])
        raise CommandError(f"{who} keeps one counter per {per}, so the model alone names none; {_name_it(args)}, "
                           f"such as {example!r} (`list` shows the counters)")
    return opts.key


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
    furthest = _stored_ahead(args, model, key, value if is_called else value - sequence.step)
    if furthest is None:
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


def _stored_ahead(args: argparse.Namespace, model: Type[Model], key: str, last: int) -> Optional[int]:
    """Where the IDs stored on counter ``key`` end, when a counter at ``last`` would hand out stored IDs (of the
    models sharing it too); None when it would not. A cycling sequence's IDs are read as a ring
    (:func:`ring_end`)."""
    opts = options_for(model)
    # the stored IDs of every region, for a region's counter: a region's values must pass them all
    values = _ids_of(args, model, segments=4).get(key.rpartition("@")[0] if opts.regions else key)
    if not values:
        return None
    if opts.sequence.cycle:
        return ring_end(values, opts.sequence) if behind(values, opts.sequence, last) else None
    furthest = max(values) if opts.step > 0 else min(values)
    return None if (last >= furthest if opts.step > 0 else last <= furthest) else furthest


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
    named = _named(args)
    owners: List[Optional[Options]] = [options_for(model) for _, model in named]
    description = Description()
    for owner, spec in zip(owners or [None], [spec for spec, _ in named] or [""]):  # no model: --table's counters
        model = None if owner is None else owner.model
        counter = _counter(args, model)
        description.add(counter, _scan_raw(counter, model), owner, spec)
    description.print(args.json)
    for problem in description.problems:
        print(f"error: {problem}", file=sys.stderr)
    return EXIT_PROBLEMS if description.problems else 0


def _seed(args: argparse.Namespace) -> int:
    for spec, model, group in _groups(args, counted=True):
        _seed_one(args, spec, model, group)
    return 0


def _groups(args: argparse.Namespace, counted: bool) -> List[Tuple[str, Type[Model], List[Type[Model]]]]:
    """Each model named with the models sharing its counter (:func:`_group`), a counter named twice once."""
    found, grouped = [], set()
    for spec, model in _named(args, counted):
        if model in grouped:  # another model named shares its counter: done with that one
            continue
        group = _group(args, model)
        grouped.update(group)
        found.append((spec, model, group))
    return found


def _seed_one(args: argparse.Namespace, spec: str, model: Type[Model], group: List[Type[Model]]) -> None:
    """Seed the counters of ``model`` from the IDs stored by ``group`` (the models drawing from them)."""
    opts = options_for(model)
    _readable(opts, "seed cannot read the counter each ID belongs to; set each counter with "
                    "`pynamodb-autoinc set N --key KEY` (`list` shows the keys)")
    counter = _counter(args, model)
    ids = _ids_of(args, model, args.segments, group=group)
    if opts.regions:
        report = regions.seed(opts, counter, furthest_ids(ids, opts.step), dry_run=args.dry_run)
        print("\n".join(report) if report else f"{model.__name__} stores no IDs and has no counters: nothing to seed")
        if args.dry_run and report:
            print("dry run: nothing was written")
        return
    _refuse_outside(opts, furthest_ids(ids, opts.step), spec)
    with _counter_errors(counter, model):
        for step in plan_seed(counter, opts, ids):
            print(step.preview(spec, dry_run=args.dry_run) or step.apply(counter))
    if not any(ids.values()):
        print(f"{model.__name__} stores no IDs: nothing to seed")
    elif args.dry_run:
        print("dry run: nothing was written")


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


@dataclass
class _Findings:
    """What ``check`` found beside its report: problems (``error:`` lines, exit 3) and notes."""

    problems: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    bad: bool = False
    """The report shows duplicates, or holes in a gapless model."""


def _check(args: argparse.Namespace) -> int:
    report: List[Dict[str, Any]] = []
    found, empty = _Findings(), []
    for spec, model, group in _groups(args, counted=False):
        rows = _check_group(args, spec, model, group, found)
        report.extend(rows)
        empty.extend([] if rows else [model.__name__])
    if args.json:
        print(json.dumps(report))
    else:
        print_check(report)
        for name in empty:
            print(f"{name} stores no IDs")
    for note in found.notes:
        print(f"note: {note}", file=sys.stderr)
    for problem in found.problems:
        print(f"error: {problem}", file=sys.stderr)
    return EXIT_PROBLEMS if found.bad or found.problems else 0


def _check_group(args: argparse.Namespace, spec: str, model: Type[Model], group: List[Type[Model]],
                 found: _Findings) -> List[Dict[str, Any]]:
    """``check``'s rows of ``model``'s counters, from the IDs ``group`` stores. A counter behind its stored IDs, or
    holding no integer, is a problem; one missing beside stored IDs (a table not seeded yet) is noted."""
    opts = options_for(model)
    _readable(opts, "check cannot tell which sequence a stored ID belongs to; check such IDs with a query")
    groups = by_counter(opts, _ids_of(args, model, args.segments, quiet=args.json, group=group))
    counter = _counter(args, model) if opts.strategy == "counter" else None
    lasts = {} if counter is None else _last_values(counter, model, sorted(groups), found)
    repair = _repair(args, spec)
    rows = [check_row(key, values, sequence, lasts.get(key), repair if counter else None)
            for key, (sequence, values) in sorted(groups.items())]
    for row in rows:
        if row["problem"]:
            (found.notes if row["last_value"] is None else found.problems).append(row["problem"])
    found.bad = found.bad or any(row["duplicates"] or (opts.gapless and row["holes"]) for row in rows)
    return rows


def _last_values(counter: Type[NextId], model: Type[Model], keys: List[str],
                 found: _Findings) -> Dict[str, Optional[int]]:
    """The value of each counter of ``keys`` (read 16 at a time); one holding no integer is a problem, and None;
    a counter table that does not exist is noted (every counter is missing)."""
    def last(key: str) -> Optional[int]:
        try:
            return counter.currval(key)
        except CounterValueError as exc:
            found.problems.append(str(exc))
            return None

    try:
        with ThreadPoolExecutor(max_workers=MAX_SCAN_THREADS) as pool:
            return dict(zip(keys, pool.map(last, keys)))
    except CounterTableMissingError:
        found.notes.append(str(_missing(counter, model)))
        return {}


def _repair(args: argparse.Namespace, spec: str) -> Callable[[str, List[int], SequenceOptions, Optional[int]], str]:
    """What to run for counter ``key`` behind its stored IDs: seed (which moves it, never back), or for a cycling
    counter that holds a value, which seed leaves where it is, set to where the stored IDs end."""
    reach = "".join(f" {option} {value}" for option, value in (("--host", args.host), ("--region", args.region),
                                                              ("--table", args.table)) if value)

    def command(key: str, values: List[int], sequence: SequenceOptions, last: Optional[int]) -> str:
        if sequence.cycle and last is not None:
            return f"pynamodb-autoinc{reach} set {ring_end(values, sequence)} --model {spec} --key {key}"
        return f"pynamodb-autoinc{reach} seed --model {spec}"

    return command


def _policy(args: argparse.Namespace) -> int:
    models = [model for _, model in _named(args, counted=False)]
    print(json.dumps(iam.policy(*models, region=args.region or "*", account=args.account,
                                own_counters_only=args.own_counters_only), indent=2))
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


def _ids_of(args: argparse.Namespace, model: Type[Model], segments: int, quiet: bool = False,
            group: Optional[List[Type[Model]]] = None) -> Dict[str, List[int]]:
    """Every auto-increment value stored by ``model`` and the models sharing its counter (``group``, default
    :func:`_group`), by counter key: one parallel scan per table, showing its progress on a terminal (unless
    ``quiet``); the items holding none: a note on stderr."""
    ids: Dict[str, List[int]] = {}
    for models in tables(group or _group(args, model)):
        try:
            found = Scan([_watched(m) for m in models], segments, progress(segments, quiet=quiet)).run()
        except PynamoDBException as exc:
            raise _scan_failed(models[0], exc, models[0]) from exc
        for key, values in found.items():
            ids.setdefault(key, []).extend(values)
    return ids
