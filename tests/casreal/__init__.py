"""Real CAS stores filled by ct-cake: ct-cache-report --json against our collector."""
