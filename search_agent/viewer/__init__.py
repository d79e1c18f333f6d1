"""The trajectory and run viewer (no JAX): workdirs in, one HTML page out."""
