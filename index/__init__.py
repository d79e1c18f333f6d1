"""Binaries: build, serve and calibrate search indexes (`python -m index.*`)."""
