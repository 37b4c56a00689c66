"""Stage 1, plan: the config validated (the schema's defaults applied), each profile
resolved for this host, the languages compared, the load tools' kinds, and the
matrix of cells in their seeded order."""
