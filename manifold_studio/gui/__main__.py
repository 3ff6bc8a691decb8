from manifold_studio.gui.app import main

raise SystemExit(main())
