"""consultation.symptoms."""
