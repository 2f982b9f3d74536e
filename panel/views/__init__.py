"""Panel views, one module per page."""
