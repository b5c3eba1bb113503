"""Tools the model may call: specs, calls, results and the catalog seam."""
