"""The Grafana dashboard's queries against a real Prometheus scraping the collector."""
