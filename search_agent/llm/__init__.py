"""One protocol for every model role: policy, teacher, judge, critic, etc."""
