"""The config checks, one room: everything a stage's command line and composed config pass before Hydra acts.

In the order a command meets them: :mod:`.choices` (a config-group choice names a file), :mod:`.preflight`
(runs the next two on the command line and the composed config), :mod:`.gates` (code, paths and secrets over
the whole tree) with :mod:`.interpolation` (what an interpolation may build), :mod:`.bounds` (what a config may
ask of the machine: config folders, fan-out), :mod:`.kinds` (every key's type against the shipped configs),
:mod:`.values` (each key's range and names, normalised; the stage's entry check), :mod:`.redact` (secrets
kept out of logged params). :mod:`.errors` is what they all raise and how it is shown.
"""
