"""The .deb/.rpm, the container image and the Kubernetes manifests, installed and run."""
