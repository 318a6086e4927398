"""The ladder for networked bots (docs/ladder.md): logged-in connections that ask for it are
paired continuously by rating. ``policy`` is the pure matchmaking, ``service`` runs it on the
reactor's clock for one game service, ``commands`` is the ``LADDER`` command of the text games."""
