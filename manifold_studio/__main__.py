from manifold_studio.cli.main import main

raise SystemExit(main())
