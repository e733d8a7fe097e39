"""RDU sampling: which programs are worth measuring (``sampler``, its numpy twin ``reference``)."""
