"""PADFormer's scores (``lab``, ``rgb``, ``feature``, ``fused``, and ``distance`` on its
CNN) as a method of the registry: the model, scoring and export themselves live in
``model``, ``detect`` and ``deploy``, which this method wires together."""
