// Brings the @testing-library/jest-dom matchers (toBeInTheDocument, …) into the jest types.
import '@testing-library/jest-dom';
