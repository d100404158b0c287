"""Tools that measure and exercise the product: benchmarks (``bench``), the fault suite (``faults``) and the
synthetic input generator (``generate``). They may import the product; the product never imports them."""
