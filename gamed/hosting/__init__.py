"""Hosted bots: programs the daemon starts for a game, in a sandbox, and seats like players.

The shared layer every game uses (docs/hosting.md): ``spec`` is what a registered bot is (its
command, working directory policy, limits and how it talks), ``faults`` the one taxonomy of how a
hosted game can end badly, ``sandbox`` how a program is started (resource limits, its own process
group and session, a minimal environment, bubblewrap where the machine has it), ``process`` the
running program bridged to a game's own protocol on its stdin and stdout, and ``runner`` one game
between hosted bots from spawn to result. ``store`` keeps the bots ``gamed bot add`` registers in
the records database (and joins them to the config's), ``startcheck`` starts a bot once to see
that it does not exit at once, and ``cli`` is the ``gamed bot`` command.
"""
