"""Analysis of results (Qt-free): cluster measures, choosing k, Procrustes, reconstruction, and the tasks behind the clustering and classification views."""
