"""torchlint's rules, one package per family (``modules``, ``training``, ...), one module per
rule named ``tl<code>_<name>.py``; found by :mod:`torchlint.registry`."""
