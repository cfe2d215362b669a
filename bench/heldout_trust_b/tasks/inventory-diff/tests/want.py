WANT = {"added": ["E-600", "F-700"], "removed": ["A-200"],
        "changed": {"B-300": (12, 10), "C-400": (3, 4)},
        "moved": {"A-100": ("shelf-1", "shelf-3"), "C-400": ("dock", "yard")}}
