"""Training the comparator: episodes of a query and references of one procedural object,
synthetic anomalies made on the fly, the mask loss and a resumable loop on cached cells."""
