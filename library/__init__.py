"""The arenac standard library (arenac.library): substrates, fault templates, profiles, macros."""
