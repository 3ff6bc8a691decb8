from manifold_studio.cli import main

raise SystemExit(main())
