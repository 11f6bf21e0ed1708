"""The ``kube-extender`` command (:mod:`.main`), one module per subcommand, and what the
commands share (:mod:`.common`, :mod:`.logs`). The top layer: nothing else of the product
imports it."""
