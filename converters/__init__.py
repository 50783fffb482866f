"""Format converters into USD (installed as usdphys.converters). Chrono YAML first."""
