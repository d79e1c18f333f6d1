"""Scripts that regenerate model test fixtures."""
