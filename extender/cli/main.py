"""``kube-extender``: the command line.

Each subcommand is a module of this package, imported only when used:

* ``serve``    the extender service under gunicorn      (``extender.cli.serve``)
* ``run``      the standalone scheduler                 (``extender.cli.run``)
* ``scenario`` run a scenario file against a cluster    (``extender.cli.scenario``)
* ``cluster``  a local control plane for tests/demos    (``extender.cli.cluster``)
* ``demo``     the README's first command, end to end   (``extender.cli.demo``)
* ``new-plugin`` write an out-of-tree plugin package    (``extender.cli.new_plugin``)
* ``explain``  why a pod is Pending / landed there      (``extender.cli.explain``)
* ``simulate`` offline what-if over a cluster dump      (``extender.cli.simulate``)
* ``import``   a public cluster trace into a replay trace (``extender.cli.import_trace``)
* ``record``   a trace of a live cluster or of a dump   (``extender.cli.record``)
* ``replay``   replay a trace under policies, compare them (``extender.cli.replay``)
"""

from __future__ import annotations

import importlib
import sys

from extender import __version__

COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("extender.cli.serve", "serve the scheduler extender over HTTP(S)"),
    "run": ("extender.cli.run", "run the standalone scheduler"),
    "scenario": ("extender.cli.scenario", "run a scenario file against a cluster"),
    "cluster": ("extender.cli.cluster", "start/stop a local control plane"),
    "demo": ("extender.cli.demo", "set up a control plane, run the seed scenario, tear down"),
    "new-plugin": (
        "extender.cli.new_plugin",
        "write an out-of-tree plugin package (tests, config)",
    ),
    "explain": ("extender.cli.explain", "why a pod is Pending, or why it landed where it did"),
    "simulate": ("extender.cli.simulate", "offline what-if: schedule pods into a dump"),
    "import": ("extender.cli.import_trace", "a public cluster trace (openb) as a replay trace"),
    "record": ("extender.cli.record", "write a replay trace of a live cluster or a dump"),
    "replay": ("extender.cli.replay", "replay a trace under scheduling policies and compare"),
}


# Top-level module -> the extra that installs it.
OPTIONAL_MODULES = {"cryptography": "controlplane", "distributed": "sweep"}


def usage() -> str:
    lines = ["usage: kube-extender COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<11} {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "Run 'kube-extender COMMAND --help' for a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if args[0] in ("--version", "version"):
        print(f"kube-extender {__version__}")
        return 0
    command = COMMANDS.get(args[0])
    if command is None:
        print(f"kube-extender: unknown command {args[0]!r}\n\n{usage()}", file=sys.stderr)
        return 2
    from extender.framework.runtime import ProfileError

    try:
        # An extra's module is imported by the command's module or, deferred so that --help
        # works without it, only when the command runs: one message for both.
        module = importlib.import_module(command[0])
        return int(module.main(args[1:]) or 0)
    except ModuleNotFoundError as exc:
        extra = OPTIONAL_MODULES.get((exc.name or "").split(".")[0])
        if extra is None:
            raise
        print(
            f"kube-extender {args[0]}: needs the optional dependency {exc.name!r}: "
            f"pip install 'kube-extender[{extra}]'",
            file=sys.stderr,
        )
        return 2
    except ProfileError as exc:
        # A profile that cannot be built (a plugin whose constructor raises): the same one
        # line and exit 2 in every command, wherever the command builds its frameworks.
        print(f"kube-extender {args[0]}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
