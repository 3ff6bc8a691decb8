"""Pictures without Qt: PNG/SVG maps, colours, map coordinates, a spatial index for hover."""
