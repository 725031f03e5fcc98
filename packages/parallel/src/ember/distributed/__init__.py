"""ember.distributed: process groups and collectives with torch.distributed's names, over MPI."""
