"""Result views (Qt). The built-in ones are listed in :data:`manifold_studio.gui.window_tools.VIEWS`;
:mod:`.base` has the view contract."""
