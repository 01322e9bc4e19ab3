"""Staff consoles: pages for Ladder's own people (compliance officers, operators), in the portal's web app, behind
its sign-in. ``frame`` gates them by the staff permissions of ``tenancy.domain.roles`` and draws their navigation; each
console is one module of views (``compliance``, ``operators``) with its templates under
``portal/templates/consoles/``."""
