"""The process-group backends that ship with ember-parallel, each a plugin registered like a third party's."""
