"""What every API router shares: token auth, the one error shape, OpenAPI helpers."""
