from .store import Inventory, InsufficientStock
